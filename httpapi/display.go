package httpapi

import (
	"context"
	"net/http"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/desktop"
)

// Screen is a run's display as it was (GET /v1/runs/{ref}/screen).
type Screen struct {
	Run string `json:"run"`
	PNG []byte `json:"png"` // base64 in JSON
}

// InputRequest is the body of POST /v1/runs/{ref}/input: one action on the
// run's display.
type InputRequest struct {
	Action string `json:"action"` // click, move, type or key
	X      int    `json:"x,omitempty"`
	Y      int    `json:"y,omitempty"`
	Text   string `json:"text,omitempty"` // type: the text; key: the key
}

// Input is the action as desktop.Input.
func (q InputRequest) Input() desktop.Input {
	return desktop.Input{Action: q.Action, X: q.X, Y: q.Y, Text: q.Text}
}

func (s *Server) screen(w http.ResponseWriter, r *http.Request) {
	ref, ok := s.inspected(w, r)
	if !ok {
		return
	}
	b, err := s.rt.Screen(ctxOf(r), ref.Run.ID)
	handle(w, http.StatusOK, Screen{Run: ref.Run.Name, PNG: b}, err)
}

func (s *Server) input(w http.ResponseWriter, r *http.Request) {
	var req InputRequest
	if !decodeOrFail(w, r, &req) {
		return
	}
	if _, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionSendWork); !ok {
		return
	}
	err := s.rt.Input(ctxOf(r), r.PathValue("ref"), req.Input())
	handle(w, http.StatusOK, struct{}{}, err)
}

// vnc is GET /v1/runs/{ref}/vnc: a WebSocket (subprotocol "binary")
// carrying the run's VNC, for a VNC client such as noVNC. Seeing a display
// is driving it, so a run's capability needs the right to send it work.
func (s *Server) vnc(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionSendWork); !ok {
		return
	}
	conn, err := s.rt.DialDisplay(ctxOf(r), r.PathValue("ref"))
	if err != nil {
		writeErr(w, err)
		return
	}
	desktop.Bridge(w, r, conn)
}

// Screen takes a PNG of run ref's display (tine screen).
func (c *Client) Screen(ctx context.Context, ref string) (*Screen, error) {
	return get[Screen](ctx, c, runPath(ref, "screen"))
}

// Input performs an action on run ref's display (tine input).
func (c *Client) Input(ctx context.Context, ref string, req InputRequest) error {
	_, err := post[struct{}](ctx, c, runPath(ref, "input"), req)
	return err
}
