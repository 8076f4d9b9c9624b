package mcp

import (
	"context"
	"fmt"

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

// Text implements API with httpapi.Client.
func (c *Client) Text(ctx context.Context, path string, limit int) (string, int64, error) {
	cp, err := c.capability()
	if err != nil {
		return "", 0, err
	}
	return httpapi.NewClient(c.socket, cp).Text(ctx, path, limit)
}
