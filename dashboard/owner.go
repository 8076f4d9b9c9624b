package dashboard

import (
	"context"
	"fmt"
	"net/http"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/access"
)

// A normal user's dashboard (the caller in the request's context: their
// dashboard token's user, or on the people's socket their SO_PEERCRED) shows
// and acts on the workspaces package access lets them use, as the API
// does; another user's run, group or approval is not found.

// own serves next only when the run {r}, group {g} or approval {id} the
// request names is in a workspace its caller may use, and that lives here
// (WithElsewhere).
func (h *Handler) own(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c := access.From(r.Context()); c != nil {
			if err := h.mayUse(r, c); err != nil {
				h.fail(w, r, err)
				return
			}
		}
		if h.away != nil {
			if ws := h.workspaceOf(r); ws != "" {
				if err := h.away(r.Context(), ws); err != nil {
					h.fail(w, r, err)
					return
				}
			}
		}
		next(w, r)
	}
}

// workspaceOf is the workspace of the run {r}, group {g} or approval {id}
// r names; "" when it names none that exists (the page says so).
func (h *Handler) workspaceOf(r *http.Request) string {
	ctx := r.Context()
	if ref := r.PathValue("r"); ref != "" {
		if run, err := h.e.FindRun(ctx, ref); err == nil {
			return run.Workspace.ID
		}
		return ""
	}
	if ref := r.PathValue("g"); ref != "" {
		if g, _, err := h.e.Group(ctx, ref); err == nil {
			return g.Workspace
		}
		return ""
	}
	if id := r.PathValue("id"); id != "" {
		var ws string
		h.e.Store().View(ctx, func(tx tine.Tx) error {
			a, err := tx.Approval(id)
			if err == nil {
				ws = a.Workspace
			}
			return err
		})
		return ws
	}
	return ""
}

// mayUse checks what r names against c: not found when c may not use it.
func (h *Handler) mayUse(r *http.Request, c *access.Caller) error {
	ctx := r.Context()
	if ref := r.PathValue("r"); ref != "" {
		_, err := c.Run(ctx, h.e, ref)
		return err
	}
	if ref := r.PathValue("g"); ref != "" {
		if g, _, err := h.e.Group(ctx, ref); err == nil {
			if _, err := c.Workspace(ctx, h.e.Store(), g.Workspace); err == nil {
				return nil
			}
		}
		return fmt.Errorf("no group %q: %w", ref, tine.ErrNotFound)
	}
	if id := r.PathValue("id"); id != "" {
		var a *tine.Approval
		err := h.e.Store().View(ctx, func(tx tine.Tx) error {
			var err error
			a, err = tx.Approval(id)
			return err
		})
		if err == nil {
			if _, err := c.Workspace(ctx, h.e.Store(), a.Workspace); err == nil {
				return nil
			}
		}
		return fmt.Errorf("no approval %q: %w", id, tine.ErrNotFound)
	}
	return nil
}

// callerOf is who the request of ctx acts for: nil for someone who sees
// every workspace.
func callerOf(ctx context.Context) *access.Caller { return access.From(ctx) }
