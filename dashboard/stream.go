package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/grouprec"
)

// heartbeat keeps an idle event stream's connection open through proxies.
const heartbeat = 15 * time.Second

// streamEvent is what the stream sends of each event.
type streamEvent struct {
	Seq       int64          `json:"seq"`
	Workspace string         `json:"workspace"`
	Run       string         `json:"run,omitempty"`
	Kind      tine.EventKind `json:"kind"`
}

// stream is GET /ui/events/stream: server-sent events of the events
// logged after ?after=N (or Last-Event-ID, or now), polled every
// pollEvery until the client goes. With ?group=G&report=STAMP it also
// sends a "report" event whenever group G's fork-run report changes from
// the one of that stamp (its version, grouprec.Group.Seq): fork-run
// rewrites it as forks progress, which logs no event.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request) {
	// Through the wrappers around w (an access log), by their Unwrap.
	fl := http.NewResponseController(w)
	after := h.streamStart(r)
	watch := h.watchReport(r)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	if err := fl.Flush(); err != nil {
		return // the header is out: nothing more to say on this connection
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	quiet := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		n, err := h.send(w, r, &after)
		if err != nil {
			return
		}
		if watch != nil {
			m, err := watch.send(w)
			if err != nil {
				return
			}
			n += m
		}
		if n == 0 && time.Since(quiet) > heartbeat {
			fmt.Fprint(w, ": keepalive\n\n")
			n = 1
		}
		if n > 0 {
			quiet = time.Now()
			fl.Flush()
		}
	}
}

// streamStart is the seq the stream starts after.
func (h *Handler) streamStart(r *http.Request) int64 {
	for _, s := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")} {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return lastSeq(r.Context(), h.e)
}

// send writes the events after *after and advances it; it returns how
// many it wrote.
func (h *Handler) send(w http.ResponseWriter, r *http.Request, after *int64) (int, error) {
	all, err := h.e.Events(r.Context(), tine.EventFilter{After: *after, Limit: 100})
	if err != nil || len(all) == 0 {
		return 0, err
	}
	evs := callerOf(r.Context()).Events(r.Context(), h.e.Store(), all)
	*after = all[len(all)-1].Seq // past another user's events too
	for _, ev := range evs {
		b, _ := json.Marshal(streamEvent{Seq: ev.Seq, Workspace: ev.Workspace, Run: ev.Run, Kind: ev.Kind})
		if _, err := fmt.Fprintf(w, "id: %d\nevent: tine\ndata: %s\n\n", ev.Seq, b); err != nil {
			return 0, err
		}
	}
	return len(evs), nil
}

// reportWatch follows one group's fork-run report by its version.
type reportWatch struct {
	group string
	rec   grouprec.Group
	stamp int64 // the version the client has
}

// watchReport is the report the stream follows, or nil when the request
// names no group (or one that does not exist).
func (h *Handler) watchReport(r *http.Request) *reportWatch {
	q := r.URL.Query()
	if q.Get("group") == "" {
		return nil
	}
	g, _, err := h.e.Group(r.Context(), q.Get("group"))
	if err != nil {
		return nil
	}
	if _, err := callerOf(r.Context()).Workspace(r.Context(), h.e.Store(), g.Workspace); err != nil {
		return nil
	}
	stamp, _ := strconv.ParseInt(q.Get("report"), 10, 64)
	return &reportWatch{group: g.ID, rec: h.records(g), stamp: stamp}
}

// send writes a report event if the report changed since the last one
// sent; it returns how many events it wrote.
func (rw *reportWatch) send(w http.ResponseWriter) (int, error) {
	st := rw.rec.Seq()
	if st == rw.stamp {
		return 0, nil
	}
	rw.stamp = st
	b, _ := json.Marshal(map[string]any{"group": rw.group, "stamp": st})
	_, err := fmt.Fprintf(w, "event: report\ndata: %s\n\n", b)
	return 1, err
}
