package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/tinehq/tine/capability"
	"github.com/tinehq/tine/httpapi"
)

// API is the tine daemon as the tools use it. Client is the real one.
type API interface {
	// Do sends body as JSON with method to path and decodes the answer
	// into out, as httpapi.Client.Do: the status is returned (202: an
	// approval is pending), and an error answer as an error carrying the
	// daemon's message.
	Do(ctx context.Context, method, path string, body, out any) (int, error)
	// Text GETs path, whose answer is text rather than JSON (a patch), and
	// returns at most limit bytes of it and the whole answer's size.
	Text(ctx context.Context, path string, limit int) (string, int64, error)
}

// Client calls the daemon on its unix socket through httpapi.Client. From
// inside a run it signs every request with the run's capability, read
// afresh from its file each time: forking the run replaces it.
type Client struct {
	socket  string
	capPath string // "" on the host: requests go unsigned
}

var _ API = (*Client)(nil)

// NewClient returns a client of the daemon listening on socket, signing
// with the capability in the file capPath unless that is empty.
func NewClient(socket, capPath string) *Client {
	return &Client{socket: socket, capPath: capPath}
}

// capability reads the run's current capability, or nil on the host.
func (c *Client) capability() (*capability.Capability, error) {
	if c.capPath == "" {
		return nil, nil
	}
	cp, err := capability.ReadFile(c.capPath)
	if err != nil {
		return nil, fmt.Errorf("the run's capability: %w", err)
	}
	return &cp, nil
}

// Do implements API with httpapi.Client.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) (int, error) {
	cp, err := c.capability()
	if err != nil {
		return 0, err
	}
	return httpapi.NewClient(c.socket, cp).Do(ctx, method, path, body, out)
}

// Text implements API. httpapi.Client decodes only JSON, so this GET is
// made here, signed the same way.
func (c *Client) Text(ctx context.Context, path string, limit int) (string, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://tine"+path, nil)
	if err != nil {
		return "", 0, err
	}
	if err := c.sign(req); err != nil {
		return "", 0, err
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("the tine daemon: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return "", 0, answerErr(resp)
	}
	var b strings.Builder
	n, err := io.Copy(&b, io.LimitReader(resp.Body, int64(limit)))
	if err == nil {
		var rest int64
		rest, err = io.Copy(io.Discard, resp.Body)
		n += rest
	}
	return b.String(), n, err
}

// sign adds the run's signature of a bodiless request, as httpapi.Client
// does: arguments null, method and unescaped path.
func (c *Client) sign(req *http.Request) error {
	cp, err := c.capability()
	if err != nil || cp == nil {
		return err
	}
	signed, err := capability.Sign(*cp, capability.PurposeControl, req.Method+" "+req.URL.Path, nil, time.Now())
	if err != nil {
		return err
	}
	h, err := json.Marshal(signed)
	req.Header.Set(httpapi.RequestHeader, base64.RawURLEncoding.EncodeToString(h))
	return err
}

func (c *Client) httpClient() *http.Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", c.socket)
	}}
	return &http.Client{Transport: tr, Timeout: 10 * time.Minute}
}

// answerErr turns an error answer into an error with the daemon's message,
// wrapping the sentinel its code names.
func answerErr(resp *http.Response) error {
	var e httpapi.Error
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(b, &e) != nil || e.Error == "" {
		return fmt.Errorf("the tine daemon answered %s", resp.Status)
	}
	if s := httpapi.CodeErr(e.Code); s != nil {
		return fmt.Errorf("%s%w", e.Error, silent{s})
	}
	return errors.New(e.Error)
}

// silent wraps a sentinel without adding to the message.
type silent struct{ err error }

func (s silent) Error() string { return "" }
func (s silent) Unwrap() error { return s.err }
