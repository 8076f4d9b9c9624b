package dashboard

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/tinehq/tine/internal/access"
)

// cookieName holds the bearer token in the browser after a ?token= visit.
const cookieName = "tine_token"

// maxForm bounds the body of a form post.
const maxForm = 64 << 10

// ServeHTTP sets the security headers, checks the bearer token and, for
// state-changing requests, the CSRF token and origin, then dispatches.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	if h.token != "" {
		if h.tokenVisit(w, r) {
			return
		}
		c, ok := h.authorized(r)
		if !ok {
			h.failCode(w, http.StatusUnauthorized, "a token is required: open the URL tine dashboard prints (?token=TOKEN)")
			return
		}
		if c != nil { // a normal user's token: their workspaces only
			r = r.WithContext(access.With(r.Context(), c))
		}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if err := h.checkCSRF(w, r); err != nil {
			h.failCode(w, http.StatusForbidden, err.Error())
			return
		}
	}
	h.mux.ServeHTTP(w, r)
}

// secure sets headers that keep pages out of frames and scripts to our own.
func secure(hd http.Header) {
	hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin") // "no-referrer" would make browsers send Origin: null
	hd.Set("Cache-Control", "no-store")
}

// tokenVisit handles a GET with a valid ?token=: it stores the token in a
// cookie and redirects to the same page without it, so the token does not
// stay in the address bar or the history.
func (h *Handler) tokenVisit(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	if r.Method != http.MethodGet || !q.Has("token") {
		return false
	}
	if _, ok := h.validToken(q.Get("token")); !ok {
		return false
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: q.Get("token"), Path: "/ui/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode})
	q.Del("token")
	u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
	return true
}

// authorized reports whether r carries a valid token as a bearer token or
// cookie, and whose: a nil caller for the daemon's own token (every
// workspace), a normal user for theirs (WithUsers).
func (h *Handler) authorized(r *http.Request) (*access.Caller, bool) {
	if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return h.validToken(got)
	}
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil, false
	}
	return h.validToken(c.Value)
}

// validToken reports whether s is the daemon's token (a nil caller) or a
// user's.
func (h *Handler) validToken(s string) (*access.Caller, bool) {
	if subtle.ConstantTimeCompare([]byte(s), []byte(h.token)) == 1 {
		return nil, true
	}
	if h.users == nil {
		return nil, false
	}
	c := h.users(s)
	return c, c != nil
}

// checkCSRF refuses a state-changing request from another origin or
// without the form's CSRF token.
func (h *Handler) checkCSRF(w http.ResponseWriter, r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r.Host) {
		return errors.New("refused: the request comes from another origin")
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return errors.New("refused: the request comes from another site")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	got := r.PostFormValue("csrf")
	if subtle.ConstantTimeCompare([]byte(got), []byte(h.csrf)) != 1 {
		return errors.New("refused: the form's CSRF token is missing or stale; reload the page and try again")
	}
	return nil
}

// sameOrigin reports whether the Origin header o names host.
func sameOrigin(o, host string) bool {
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, host)
}
