package fleet

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tinehq/tine"
)

// A node forwards a request about a run of another node's workspace to
// that node (its home), and answers with what the home answered. The
// forwarded request is signed with the fleet key, which every node has
// (EnvKey, from the deployment's Secret) and the database does not: it
// binds the sending node, the receiving node, the method, the path and
// query, the body and the time, so a request seen on the wire cannot be
// sent to another node, changed, or replayed once it is older than
// SignedFor (nor twice within it: the receiver remembers the signatures it
// admitted). A normal user's request carries who they are by user name
// (HeaderUser), also signed: uids are per machine, names are what the
// nodes' account databases share; the sending node names only the user
// it knows the caller to be (SO_PEERCRED), never one the request names.

// EnvKey names the environment variable that holds the fleet key: the
// secret every node of a fleet shares to sign the requests it forwards.
const EnvKey = "TINE_FLEET_KEY"

// The headers of a forwarded request, and of its answer.
const (
	HeaderHop  = "Tine-Fleet-Hop"  // the node that forwarded the request
	HeaderAuth = "Tine-Fleet-Auth" // "v2 UNIXTIME NONCE HMAC": the fleet key's signature
	HeaderUser = "Tine-Fleet-User" // a normal user's request: their user name; none for one who sees every workspace
	HeaderNode = "Tine-Node"       // on an answer: the node that served it
)

// SignedFor is how long a forwarded request's signature is good for,
// either side of the receiver's clock.
const SignedFor = time.Minute

// MaxForwardBody is the largest request body a node forwards (the API's
// bodies are small JSON documents; a larger one is refused with 413).
const MaxForwardBody = 8 << 20

// ErrForged is a forwarded request whose signature is missing, wrong,
// stale or replayed.
var ErrForged = errors.New("forwarded request not signed with the fleet key")

// Key is the fleet key.
type Key []byte

// ParseKey returns the fleet key s, which must have at least 32
// characters (tine serve makes none: the deployment's Secret holds it).
func ParseKey(s string) (Key, error) {
	s = strings.TrimSpace(s)
	if len(s) < 32 {
		return nil, fmt.Errorf("%s: %d characters, at least 32 needed (e.g. openssl rand -hex 32): %w", EnvKey, len(s), tine.ErrInvalid)
	}
	return Key(s), nil
}

// mac is the signature of a request from node from to node to, made for
// user ("": for one who sees every workspace), at time ts with nonce (two
// alike in one second are two requests, not a replay).
func (k Key) mac(from, to, user, method, uri string, ts int64, nonce string, body []byte) string {
	sum := sha256.Sum256(body)
	h := hmac.New(sha256.New, k)
	fmt.Fprintf(h, "tine-fleet-v2\n%s\n%s\n%s\n%s\n%s\n%d\n%s\n%x", from, to, user, method, uri, ts, nonce, sum)
	return hex.EncodeToString(h.Sum(nil))
}

// sign sets r's hop, user and signature headers for its way from node
// from to node to, made for user ("": for one who sees every workspace),
// body being its whole body.
func (k Key) sign(r *http.Request, from, to, user string, body []byte) {
	ts, nonce := time.Now().Unix(), rand.Text()
	r.Header.Set(HeaderHop, from)
	r.Header.Del(HeaderUser)
	if user != "" {
		r.Header.Set(HeaderUser, user)
	}
	r.Header.Set(HeaderAuth, fmt.Sprintf("v2 %d %s %s", ts, nonce, k.mac(from, to, user, r.Method, r.URL.RequestURI(), ts, nonce, body)))
}

// Admitter checks the requests other nodes forward to one node.
type Admitter struct {
	key  Key
	node string
	mu   sync.Mutex
	seen map[string]time.Time // signatures admitted, until they expire
}

// NewAdmitter returns the Admitter of node, whose fleet key is key.
func NewAdmitter(key Key, node string) *Admitter {
	return &Admitter{key: key, node: node, seen: map[string]time.Time{}}
}

// Forwarded reports whether r claims to be forwarded by another node.
func Forwarded(r *http.Request) bool {
	return r.Header.Get(HeaderHop) != "" || r.Header.Get(HeaderAuth) != "" || len(r.Header.Values(HeaderUser)) > 0
}

// Admitted is what a forwarded request's signature vouches for.
type Admitted struct {
	From string // the node that forwarded it
	// User is the name of the normal user it is made for, as the node
	// From knew them; "" for one who sees every workspace.
	User string
}

// Admit checks the signature of r, forwarded by another node to this
// one, and returns who sent it for whom. r's body is read (up to
// MaxForwardBody) and put back. The error wraps ErrForged.
func (a *Admitter) Admit(r *http.Request) (Admitted, error) {
	in := Admitted{From: r.Header.Get(HeaderHop), User: r.Header.Get(HeaderUser)}
	f := strings.Fields(r.Header.Get(HeaderAuth))
	if a == nil || len(a.key) == 0 {
		return Admitted{}, fmt.Errorf("node %s has no fleet key (%s) and takes no forwarded requests: %w", a.nodeName(), EnvKey, ErrForged)
	}
	if len(f) > 0 && f[0] != "v2" && strings.HasPrefix(f[0], "v") {
		return Admitted{}, fmt.Errorf("signed in format %q by node %s; this node takes v2: the fleet's nodes run different tine releases, upgrade them together: %w", f[0], in.From, ErrForged)
	}
	if in.From == "" || len(f) != 4 || f[0] != "v2" || len(r.Header.Values(HeaderUser)) > 1 {
		return Admitted{}, fmt.Errorf("%s and %s (v2) are needed, and %s once at most: %w", HeaderHop, HeaderAuth, HeaderUser, ErrForged)
	}
	ts, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return Admitted{}, fmt.Errorf("%s: bad time: %w", HeaderAuth, ErrForged)
	}
	if d := time.Since(time.Unix(ts, 0)); d > SignedFor || d < -SignedFor {
		return Admitted{}, fmt.Errorf("signed %v away from this node's clock (good for %v): %w", d.Round(time.Second), SignedFor, ErrForged)
	}
	body, err := readBody(r)
	if err != nil {
		return Admitted{}, err
	}
	want := a.key.mac(in.From, a.node, in.User, r.Method, r.URL.RequestURI(), ts, f[2], body)
	if !hmac.Equal([]byte(want), []byte(f[3])) {
		return Admitted{}, fmt.Errorf("bad signature (another fleet key, or a request changed on the way): %w", ErrForged)
	}
	if !a.once(f[3]) {
		return Admitted{}, fmt.Errorf("a signature used before (replayed): %w", ErrForged)
	}
	return in, nil
}

// nodeName is a's node, for a message.
func (a *Admitter) nodeName() string {
	if a == nil {
		return "?"
	}
	return a.node
}

// once records signature sig as used and reports whether it was not
// before; signatures older than twice SignedFor are forgotten.
func (a *Admitter) once(sig string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	for s, t := range a.seen {
		if now.Sub(t) > 2*SignedFor {
			delete(a.seen, s)
		}
	}
	if _, ok := a.seen[sig]; ok {
		return false
	}
	a.seen[sig] = now
	return true
}

// readBody reads r's whole body, up to MaxForwardBody, and puts it back.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxForwardBody+1))
	r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the request's body: %w", err)
	}
	if len(body) > MaxForwardBody {
		return nil, fmt.Errorf("a body over %d bytes is not forwarded: %w", MaxForwardBody, errTooLarge)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return body, nil
}

// errTooLarge is a body too large to forward.
var errTooLarge = errors.New("request body too large")

// Forwarder sends requests on to the node a workspace lives on.
type Forwarder struct {
	f     *Fleet
	node  string // this node
	key   Key    // nil: nothing is forwarded
	trans http.RoundTripper
}

// NewForwarder returns node's Forwarder, signing with key (nil: it
// answers where the run lives instead of forwarding).
func NewForwarder(f *Fleet, node string, key Key) *Forwarder {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 5 * time.Second
	t.Proxy = nil // node to node, never through an HTTP proxy of the environment
	return &Forwarder{f: f, node: node, key: key, trans: t}
}

// Forward answers r, about what of workspace lives on node home (not this
// one), with what home answers it: never to an address a request or a
// workspace names, only to the one home registered itself. user is the
// name of the normal user r is made for, as this node knows them (by
// SO_PEERCRED), whom home serves as its own user of that name; "" for
// one who sees every workspace. A home that is not up (lost, stopped) is
// answered 503 at once; one that does not answer 502; without a fleet
// key, 421 with where it lives.
func (fw *Forwarder) Forward(w http.ResponseWriter, r *http.Request, what, home, user string) {
	n, err := fw.f.Node(r.Context(), home)
	switch {
	case errors.Is(err, tine.ErrNotFound):
		writeError(w, http.StatusServiceUnavailable, "node_down", home, "", fmt.Sprintf("%s lives on node %s, which is not registered in the fleet", what, home))
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, "error", home, "", err.Error())
		return
	case n.State != NodeUp:
		writeError(w, http.StatusServiceUnavailable, "node_down", home, n.Address, fmt.Sprintf("%s lives on node %s, which is %s (%s): its files and processes are there alone; bring node %s back to reach it",
			what, home, n.State, n.Reason, home))
		return
	case fw.key == nil || n.Address == "":
		why := fmt.Sprintf("this node has no fleet key (%s) to forward with", EnvKey)
		if n.Address == "" {
			why = fmt.Sprintf("node %s has no address (tine serve --listen or --address)", home)
		}
		writeError(w, http.StatusMisdirectedRequest, "other_node", home, n.Address, fmt.Sprintf("%s lives on node %s; %s: ask that node%s", what, home, why, at(n.Address)))
		return
	}
	target, err := url.Parse(n.Address)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		writeError(w, http.StatusBadGateway, "node_unreachable", home, n.Address, fmt.Sprintf("%s lives on node %s, whose registered address %q is not an http(s) URL", what, home, n.Address))
		return
	}
	body, err := readBody(r)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, errTooLarge) {
			code = http.StatusRequestEntityTooLarge
		}
		writeError(w, code, "invalid", home, n.Address, err.Error())
		return
	}
	fw.proxy(target, home, what, user, body).ServeHTTP(w, r)
}

// proxy is the reverse proxy to node home at target for one request of
// body body, made for user.
func (fw *Forwarder) proxy(target *url.URL, home, what, user string, body []byte) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
			// What stood for the caller here means nothing there, and
			// must not travel: this node's bearer token, cookies, and any
			// fleet header the caller sent (who they are is user).
			for _, h := range []string{"Authorization", "Cookie", HeaderHop, HeaderAuth, HeaderUser} {
				pr.Out.Header.Del(h)
			}
			fw.key.sign(pr.Out, fw.node, home, user, body)
		},
		Transport:     fw.trans,
		FlushInterval: -1, // event streams and logs as they come
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(w, http.StatusBadGateway, "node_unreachable", home, target.String(), fmt.Sprintf("%s lives on node %s, which did not answer at %s: %v", what, home, target, err))
		},
	}
}

// at is " at ADDR", or "" for no address.
func at(addr string) string {
	if addr == "" {
		return ""
	}
	return " at " + addr
}

// writeError answers a failure to reach node with the API's error shape,
// the node and its address beside.
func writeError(w http.ResponseWriter, status int, code, node, addr, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": code, "node": node, "address": addr})
}
