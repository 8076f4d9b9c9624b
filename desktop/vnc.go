package desktop

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/coder/websocket"
	"github.com/tinehq/tine/netns"
)

// ErrNotTheServer means that what serves VNC at a run's VNCSocket is not
// the X server tine started for its display: the run put a server of its
// own there, which the bridge does not carry to a person's browser.
var ErrNotTheServer = errors.New("the VNC server is not the run's X server")

// Bridge answers a WebSocket request (noVNC's, subprotocol "binary") and
// carries its binary messages to and from vnc, a connection to a run's
// X server's VNC (DialVNC), until either side ends; it closes vnc. The
// request must come from the page's own origin (websocket.Accept refuses others), so another
// site cannot open a display in a visitor's browser.
func Bridge(w http.ResponseWriter, r *http.Request, vnc net.Conn) {
	defer vnc.Close()
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"binary"}})
	if err != nil {
		return // Accept answered the request
	}
	defer ws.CloseNow()
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	ws.SetReadLimit(1 << 20)
	c := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	defer c.Close()
	netns.Splice(c, vnc)
}
