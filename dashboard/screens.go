package dashboard

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/desktop"
	"github.com/tinehq/tine/forkrun"
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

// finalScreen is GET /ui/groups/{g}/screen/{run}: the final screen a
// fork-run kept of one of its forks (forkrun.Fork.Screen), a PNG.
func (h *Handler) finalScreen(w http.ResponseWriter, r *http.Request) {
	g, _, err := h.e.Group(r.Context(), r.PathValue("g"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	rep, err := forkrun.Load(h.e, g.Workspace, g.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, f := range rep.Forks {
		if f.Run != r.PathValue("run") || f.Screen == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(h.e.Layout().Group(g.Workspace, g.ID).Dir(), forkrun.ScreenFile(f.Run)))
		if err != nil {
			h.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write(b)
		return
	}
	h.fail(w, r, fmt.Errorf("group %s kept no final screen of %q: %w", g.ID, r.PathValue("run"), tine.ErrNotFound))
}
