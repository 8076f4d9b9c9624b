package dashboard

import (
	"net/http"

	"github.com/tinehq/tine/desktop"
)

// vnc is GET /ui/runs/{r}/vnc: a WebSocket carrying the run's VNC, which
// the group page's screen tiles open (noVNC). The dashboard's bearer token
// or cookie guards it as every page; view-only is the tile's, not a
// limit: whoever may see a run's display may drive it (tine input).
func (h *Handler) vnc(w http.ResponseWriter, r *http.Request) {
	conn, err := h.rt.DialDisplay(r.Context(), r.PathValue("r"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	desktop.Bridge(w, r, conn)
}
