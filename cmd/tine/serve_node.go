package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/dashboard"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/errcode"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/access"
	"github.com/tinehq/tine/internal/account"
	"github.com/tinehq/tine/layer/builtin"
	"github.com/tinehq/tine/livefork"
	"github.com/tinehq/tine/store"
)

// nodeFlags are tine serve's flags for a node of a fleet.
type nodeFlags struct {
	name     string
	capacity int
	beat     time.Duration
	tasksDir string
	address  string
	shared   bool
	retain   time.Duration
}

// addNodeFlags adds the node flags to serve's command c.
func addNodeFlags(c *cobra.Command, n *nodeFlags) {
	f := c.Flags()
	f.StringVar(&n.name, "node", "", "serve as this node of a fleet (the store must be PostgreSQL's): register, heartbeat and take queued tasks")
	f.IntVar(&n.capacity, "capacity", 1, "with --node: tasks run at once (0: serve the fleet's API, take no tasks)")
	f.DurationVar(&n.beat, "heartbeat", fleet.DefaultBeat, "with --node: heartbeat period; a node silent for 3 periods is lost")
	f.StringVar(&n.tasksDir, "tasks-dir", "", "with --node: where tasks' workspaces are made (default: the state directory's path with -tasks appended)")
	f.DurationVar(&n.retain, "task-retention", 0, "with --node: release a task's workspace (its forks discarded; its results stay in the fleet) this long after the task ended (0: keep them)")
	f.BoolVar(&n.shared, "shared-tasks", false, "with a PostgreSQL store: every user of the daemon sees every task of the fleet (default: a normal user sees their own)")
	f.StringVar(&n.address, "address", "", "with --node: the address other nodes and clients reach this node's API at (default: http:// and --listen's address)")
}

// node is what tine serve adds when its store is PostgreSQL's: the
// fleet's API (GET /v1/fleet, tasks), and with --node a running node of
// the fleet.
type node struct {
	f    *fleet.Fleet
	e    *engine.Engine
	name string // "": not a node, the fleet's API only
	done chan error
	// shared: every user sees every task (tine serve --shared-tasks);
	// else a normal user sees their own.
	shared bool
	// fwd forwards requests about other nodes' runs and workspaces to
	// them; admitter checks those forwarded here (fleet.EnvKey).
	fwd      *fleet.Forwarder
	admitter *fleet.Admitter
}

// startNode opens the fleet when the store is PostgreSQL's and, when n
// names a node, starts serving e as that node (with its API at listen, if
// any) until ctx ends; nil when the store is not PostgreSQL's. The caller
// waits for it with wait.
func (a *app) startNode(ctx context.Context, e *engine.Engine, n nodeFlags, listen string, say func(string, ...any)) (*node, error) {
	u, err := store.URL(a.home)
	if err != nil {
		return nil, err
	}
	if kind, _ := store.Kind(u); kind != "postgres" {
		if n.name == "" {
			return nil, nil
		}
		return nil, fmt.Errorf("tine serve --node needs a PostgreSQL store (%s or [store] url): the fleet's nodes and tasks live there: %w", store.EnvURL, tine.ErrInvalid)
	}
	f, err := fleet.Open(ctx, u)
	if err != nil {
		return nil, err
	}
	nd := &node{f: f, e: e, name: n.name, done: make(chan error, 1), shared: n.shared}
	if n.name == "" {
		nd.done <- nil
		return nd, nil
	}
	if nd.fwd, nd.admitter, err = forwarding(f, n.name, say); err != nil {
		f.Close()
		return nil, err
	}
	if n.retain < 0 {
		f.Close()
		return nil, fmt.Errorf("--task-retention %v: 0 (keep) or a positive duration: %w", n.retain, tine.ErrInvalid)
	}
	if n.tasksDir == "" {
		n.tasksDir = filepath.Clean(e.Home()) + "-tasks"
	}
	if n.address == "" && listen != "" {
		n.address = "http://" + listen
	}
	info := fleet.NodeInfo{Name: n.name, Address: n.address, Capacity: n.capacity, Beat: n.beat,
		Backends: backendNames(), LiveFork: liveForkEngines(ctx)}
	nd.claimHeld(ctx, say)
	go func() {
		nd.done <- f.Serve(ctx, fleet.NodeConfig{Info: info, Run: fleet.EngineRunner(e, f, n.name, n.tasksDir), Say: say,
			Retain: n.retain, Clean: fleet.EngineCleaner(e, n.tasksDir)})
	}()
	return nd, nil
}

// claimHeld records as living here every workspace whose files are on
// this node and that has no home on record (made before the machine
// joined the fleet, or by tine init with no daemon), so that the other
// nodes forward requests about it here rather than answer them.
func (nd *node) claimHeld(ctx context.Context, say func(string, ...any)) {
	var all []*tine.Workspace
	err := nd.e.Store().View(ctx, func(tx tine.Tx) error {
		var err error
		all, err = tx.Workspaces()
		return err
	})
	for _, w := range all {
		if err == nil && nd.holds(w) {
			_, err = nd.homeOf(ctx, w)
		}
	}
	if err != nil {
		say("node %s: the workspaces whose files are here are not all recorded as living here: %v", nd.name, err)
	}
}

// forwarding returns node's forwarder and admitter, with the fleet key
// of the environment (fleet.EnvKey); without one the node answers where
// another node's run lives (421) and admits no forwarded request.
func forwarding(f *fleet.Fleet, node string, say func(string, ...any)) (*fleet.Forwarder, *fleet.Admitter, error) {
	s := os.Getenv(fleet.EnvKey)
	if s == "" {
		say("node %s: no fleet key (%s): requests about other nodes' runs are answered with where they live, not forwarded", node, fleet.EnvKey)
		return fleet.NewForwarder(f, node, nil), nil, nil
	}
	key, err := fleet.ParseKey(s)
	if err != nil {
		return nil, nil, err
	}
	return fleet.NewForwarder(f, node, key), fleet.NewAdmitter(key, node), nil
}

// wait waits for the node to stop (its ctx ended) and closes the fleet.
func (nd *node) wait() error {
	if nd == nil {
		return nil
	}
	err := <-nd.done
	nd.f.Close()
	return err
}

// dashboardOptions are what the fleet adds to the dashboard: its page
// (nodes and tasks) with a cancel button on each task not ended, and on a
// node the pages of a workspace living elsewhere saying where; none when
// there is no fleet.
func (nd *node) dashboardOptions() []dashboard.Option {
	if nd == nil {
		return nil
	}
	status := func(ctx context.Context) ([]fleet.Node, []*fleet.Task, error) {
		st, err := status(ctx, nd.f)
		if err != nil {
			return nil, nil, err
		}
		return st.Nodes, st.Tasks, nil
	}
	cancel := func(ctx context.Context, id string) (string, error) {
		w, err := withdraw(ctx, nd.f, id, localOwner().By+" (dashboard)")
		if err != nil {
			return "", err
		}
		return withdrawalSays(w), nil
	}
	opts := []dashboard.Option{dashboard.WithFleet(status), dashboard.WithTaskCancel(cancel)}
	if away := nd.dashboardElsewhere(); away != nil {
		opts = append(opts, dashboard.WithElsewhere(away))
	}
	return opts
}

// dashboardElsewhere says, for the dashboard, where a workspace lives
// when it is not on this node (its home on record, or none): the pages of
// its runs and groups answer that rather than act on it here; nil when
// this is no node.
func (nd *node) dashboardElsewhere() dashboard.Elsewhere {
	if nd == nil || nd.name == "" {
		return nil
	}
	return func(ctx context.Context, id string) error {
		ws, err := nd.e.FindWorkspace(ctx, id)
		if err != nil {
			return nil // the page says what is wrong
		}
		home, err := nd.homeOf(ctx, ws)
		switch {
		case err != nil:
			return err
		case home == nd.name:
			return nil
		case home == "":
			return fmt.Errorf("%s: %w", nd.noHome("workspace "+ws.Name), tine.ErrState)
		}
		where := ""
		if n, err := nd.f.Node(ctx, home); err == nil && n.Address != "" {
			where = " (" + n.Address + "/ui/)"
		}
		return fmt.Errorf("workspace %s lives on node %s, where its files and processes are: this node (%s) neither shows nor changes its runs; open node %s's dashboard%s, whose URL tine dashboard prints there: %w",
			ws.Name, home, nd.name, home, where, tine.ErrState)
	}
}

// backendNames are the file backends compiled into this tine.
func backendNames() []string {
	var out []string
	for _, d := range builtin.Backends() {
		out = append(out, d.Name)
	}
	return out
}

// liveForkEngines are the live-fork engines that work here: ptrace on
// Linux, CRIU when criu check passes.
func liveForkEngines(ctx context.Context) []string {
	if goruntime.GOOS != "linux" {
		return nil
	}
	out := []string{"ptrace"}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if livefork.CRIUProbe(ctx) == nil {
		out = append(out, "criu")
	}
	return out
}

// guard answers the fleet's routes: GET /v1/fleet and the tasks (for
// people who see every workspace, with the bearer token on TCP); and, on
// a node, sends a person's request about a run or workspace that lives on
// another node to that node (nd.home), and admits the requests other
// nodes forward here, signed with the fleet key (nd.admit).
func (nd *node) guard(token string, next http.Handler) http.Handler {
	if nd == nil {
		return next
	}
	mux := http.NewServeMux()
	// People: root and the daemon's own user see every task; a normal user
	// on the system daemon's socket their own (nd.shared: every task).
	people := func(h http.HandlerFunc) http.Handler { return httpapi.RequireToken(token, httpapi.People(h)) }
	mux.Handle("GET /v1/fleet", people(nd.fleetStatus))
	mux.Handle("POST /v1/fleet/tasks", people(nd.submitTasks))
	mux.Handle("GET /v1/fleet/tasks/{id}", people(nd.task))
	mux.Handle("POST /v1/fleet/tasks/{id}/fetch", nd.admit(token, people(nd.fetch)))
	mux.Handle("POST /v1/fleet/tasks/{id}/cancel", people(nd.cancelTask))
	if nd.name != "" {
		runs := nd.admit(token, httpapi.RequireToken(token, nd.home(next, nd.runHome)))
		workspaces := nd.admit(token, httpapi.RequireToken(token, nd.home(next, nd.workspaceHome)))
		mux.Handle("/v1/runs/{ref}", runs)
		mux.Handle("/v1/runs/{ref}/", runs)
		mux.Handle("/v1/workspaces/{ref}", workspaces)
		mux.Handle("/v1/workspaces/{ref}/", workspaces)
		groups := nd.admit(token, httpapi.RequireToken(token, nd.home(next, nd.groupHome)))
		mux.Handle("/v1/groups/{ref}/", groups)
	}
	mux.Handle("/", next)
	return mux
}

type forwardedKey struct{}

// admit passes on a request another node forwarded here once its fleet
// signature checks, marked as forwarded (it is never forwarded again):
// made for a normal user, as this node's user of the same name
// (forwardedUser), limited to their workspaces; else as the holder of
// this node's bearer token (the forwarding node admitted its caller as
// one who sees every workspace). One whose signature does not check is
// refused with 401, one for a name this node has no normal user of with
// 403 unknown_user. Other requests pass unchanged.
func (nd *node) admit(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !fleet.Forwarded(r) {
			next.ServeHTTP(w, r)
			return
		}
		in, err := nd.admitter.Admit(r)
		if err != nil {
			writeAPIJSON(w, http.StatusUnauthorized, map[string]string{"error": "node " + nd.name + ": " + err.Error(), "code": "privilege"})
			return
		}
		w.Header().Set(fleet.HeaderNode, nd.name)
		ctx := context.WithValue(r.Context(), forwardedKey{}, in.From)
		if in.User != "" {
			c, err := forwardedUser(nd.name, in.User)
			if err != nil {
				writeAPIJSON(w, http.StatusForbidden, map[string]string{"error": err.Error(), "code": codeUnknownUser, "node": nd.name})
				return
			}
			ctx = httpapi.WithPerson(ctx, c)
		}
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// codeUnknownUser is the code of the 403 answering a normal user whose
// request cannot be forwarded: the forwarding node has no name for their
// uid, or the home node no normal user of that name.
const codeUnknownUser = errcode.CodeUnknownUser

// forwardedUser is who node serves a request another node forwarded for
// the user called name: its own user of that name, as a normal user. A
// name node's account database does not have is refused, and so is one
// that is root or the daemon's own user here: a normal user elsewhere is
// never served as one who sees every workspace.
func forwardedUser(node, name string) (*access.Caller, error) {
	c, err := access.Named(name)
	if err != nil {
		return nil, fmt.Errorf("node %s serves a user forwarded from another node as its own user of the same name, and has none called %q (%v): %w", node, name, err, tine.ErrPrivilege)
	}
	if c.UID == 0 || c.UID == os.Geteuid() {
		return nil, fmt.Errorf("user %q is uid %d on node %s, who sees every workspace there: a user forwarded from another node is served as a normal user only: %w", name, c.UID, node, tine.ErrPrivilege)
	}
	return c, nil
}

// runHome is the workspace of run ref ("run R"), for home.
func (nd *node) runHome(ctx context.Context, ref string) (ws *tine.Workspace, what string, err error) {
	r, err := nd.e.FindRun(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	return r.Workspace, fmt.Sprintf("run %s (workspace %s)", r.Run.Name, r.Workspace.Name), nil
}

// workspaceHome is workspace ref, for home.
func (nd *node) workspaceHome(ctx context.Context, ref string) (ws *tine.Workspace, what string, err error) {
	w, err := nd.e.FindWorkspace(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	return w, "workspace " + w.Name, nil
}

// groupHome is the workspace of group ref ("group G"), for home.
func (nd *node) groupHome(ctx context.Context, ref string) (ws *tine.Workspace, what string, err error) {
	g, _, err := nd.e.Group(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	w, err := nd.e.FindWorkspace(ctx, g.Workspace)
	if err != nil {
		return nil, "", err
	}
	return w, fmt.Sprintf("group %s (workspace %s)", g.ID, w.Name), nil
}

// home passes a request about a run or workspace on this node to next,
// and sends a person's request about one on another node there
// (sendHome). Code inside a run is never forwarded.
func (nd *node) home(next http.Handler, find func(context.Context, string) (*tine.Workspace, string, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		person := httpapi.Person(r)
		if person == nil && !httpapi.SeesAll(r) {
			next.ServeHTTP(w, r) // code inside a run
			return
		}
		ws, what, err := find(r.Context(), r.PathValue("ref"))
		if err != nil || !person.MayUse(ws) {
			next.ServeHTTP(w, r) // the API says what is wrong with ref
			return
		}
		if !nd.sendHome(w, r, ws, what) {
			next.ServeHTTP(w, r)
		}
	})
}

// sendHome answers a person's request r about what of workspace ws when ws
// does not live on this node, and reports whether it did: forwarded to its
// home, one who sees every workspace as such, a normal user by their user
// name (their uid means nothing there); refused when no node has it here
// (CodeNoHome). A request forwarded here about one this node's record
// says lives elsewhere is refused (508), not forwarded again: a loop.
func (nd *node) sendHome(w http.ResponseWriter, r *http.Request, ws *tine.Workspace, what string) bool {
	home, err := nd.homeOf(r.Context(), ws)
	switch {
	case err != nil:
		writeAPIError(w, err)
		return true
	case home == nd.name:
		return false
	case home == "":
		writeAPIJSON(w, http.StatusConflict, map[string]string{
			"error": nd.noHome(what), "code": errcode.CodeNoHome, "node": nd.name,
		})
		return true
	}
	if from, ok := r.Context().Value(forwardedKey{}).(string); ok {
		writeAPIJSON(w, http.StatusLoopDetected, map[string]string{
			"error": fmt.Sprintf("%s lives on node %s by this node's (%s) record, but node %s forwarded it here: not forwarded again", what, home, nd.name, from),
			"code":  "loop", "node": home,
		})
		return true
	}
	user, err := nd.forwardName(httpapi.Person(r), what, home)
	if err != nil {
		writeAPIJSON(w, http.StatusForbidden, map[string]string{"error": err.Error(), "code": codeUnknownUser, "node": nd.name})
		return true
	}
	nd.fwd.Forward(w, r, what, home, user)
	return true
}

// noHome says why this node serves nothing of what: no node is its home
// on record, and its files are not here.
func (nd *node) noHome(what string) string {
	return fmt.Sprintf("%s has no home node on record, and its files are not on node %s: it was made on another machine without a node's API (tine init with no daemon there); run tine serve --node on that machine, which records the workspaces whose files it holds, or work with it there", what, nd.name)
}

// homeOf is the node workspace ws lives on: the one on record; with none
// (made without a node's API: tine init with no daemon, or before the
// machine joined the fleet), this node when ws's files are here, recorded
// so for the other nodes; else "".
func (nd *node) homeOf(ctx context.Context, ws *tine.Workspace) (string, error) {
	home, err := nd.f.Home(ctx, ws.ID)
	if err != nil || home != "" {
		return home, err
	}
	if !nd.holds(ws) {
		return "", nil
	}
	return nd.f.ClaimHome(ctx, ws.ID, nd.name)
}

// holds reports whether ws's files (its record in the state directory)
// are on this node.
func (nd *node) holds(ws *tine.Workspace) bool {
	_, err := os.Stat(nd.e.Layout().Workspace(ws.ID).Record())
	return err == nil
}

// forwardName is the user name a request of person c about what, living
// on node home, is forwarded as: "" for one who sees every workspace
// (nil), else c's name in this node's account database (the uid
// SO_PEERCRED told, never a name the request carries).
func (nd *node) forwardName(c *access.Caller, what, home string) (string, error) {
	if c == nil {
		return "", nil
	}
	name, err := c.Name()
	if err != nil {
		return "", fmt.Errorf("%s lives on node %s, which serves you as its user of your name, and uid %d has no name on node %s (%v): %w", what, home, c.UID, nd.name, err, tine.ErrPrivilege)
	}
	return name, nil
}

// homeOfInits is what records each workspace the API inits on this node
// as living here (fleet_homes), so the other nodes forward requests about
// it here; nil when this is no node. A record that fails is said, and
// the workspace kept.
func (nd *node) homeOfInits(say func(string, ...any)) func(context.Context, *tine.Workspace) {
	if nd == nil || nd.name == "" {
		return nil
	}
	return func(ctx context.Context, w *tine.Workspace) {
		if err := nd.f.SetHome(ctx, w.ID, nd.name); err != nil {
			say("node %s: workspace %s is not recorded as living here (other nodes will not forward requests about it): %v", nd.name, w.Name, err)
		}
	}
}

// fleetStatus answers the fleet's nodes and the tasks the caller sees.
func (nd *node) fleetStatus(w http.ResponseWriter, r *http.Request) {
	st, err := statusFor(r.Context(), nd.f, nd.viewer(r))
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeAPIJSON(w, http.StatusOK, st)
}

// submitTasks queues the tasks a submitRequest asks for (its repository
// resolved on this node) and answers their ids.
func (nd *node) submitTasks(w http.ResponseWriter, r *http.Request) {
	var req submitRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		writeAPIError(w, fmt.Errorf("the body is not a submission: %v: %w", err, tine.ErrInvalid))
		return
	}
	who, err := nd.submitter(r, req.Repo)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	sub, err := taskSpecs(r.Context(), req, who)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	out, err := submitAll(r.Context(), nd.f, sub)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeAPIJSON(w, http.StatusCreated, out)
}

// task answers one task with its report.
func (nd *node) task(w http.ResponseWriter, r *http.Request) {
	t, err := nd.visibleTask(r, r.PathValue("id"))
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeAPIJSON(w, http.StatusOK, t)
}

// fetchRequest is the body of POST /v1/fleet/tasks/{id}/fetch: the run
// to fork and bring the task's winner into.
type fetchRequest struct {
	Run string `json:"run"`
}

// fetch is tine fetch for the caller: their run, forked, gets the task's
// winner (fleet.Fetch), written as the workspace's owner.
func (nd *node) fetch(w http.ResponseWriter, r *http.Request) {
	var req fetchRequest
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<16))
	if err == nil {
		err = json.Unmarshal(raw, &req)
	}
	if err != nil || req.Run == "" {
		writeAPIError(w, fmt.Errorf("the body is not {\"run\": RUN}: %w", tine.ErrInvalid))
		return
	}
	t, err := nd.visibleTask(r, r.PathValue("id"))
	if err != nil {
		writeAPIError(w, err)
		return
	}
	ctx := context.WithoutCancel(r.Context())
	run, err := access.From(ctx).Run(ctx, nd.e, req.Run)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(raw)) // read again if forwarded
	if nd.name != "" && nd.sendHome(w, r, run.Workspace, fmt.Sprintf("run %s (workspace %s)", run.Run.Name, run.Workspace.Name)) {
		return
	}
	out, err := fetchTask(ctx, nd.f, nd.e, run.Run.ID, t)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeAPIJSON(w, http.StatusCreated, out)
}

// viewer is whose tasks r's caller sees: nil for every task (root, the
// daemon's own user, the bearer token's holder; everyone when the fleet
// is shared), else their own.
func (nd *node) viewer(r *http.Request) *taskOwner {
	c := access.From(r.Context())
	if c == nil || nd.shared {
		return nil
	}
	who := ownerOf(c.UID, account.Lookup(c.UID, c.GID).Name)
	return &who
}

// visibleTask is task id, when r's caller sees it; not found otherwise.
func (nd *node) visibleTask(r *http.Request, id string) (*fleet.Task, error) {
	t, err := nd.f.Task(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if v := nd.viewer(r); v != nil && !t.Mine(v.UID, v.Name) {
		return nil, fmt.Errorf("task %s: %w", id, tine.ErrNotFound)
	}
	return t, nil
}

// submitter is who r's tasks belong to: the caller, or this daemon's
// user for those who see every workspace. A normal user's repository
// must be a directory of theirs: the node reads it as root.
func (nd *node) submitter(r *http.Request, repo string) (taskOwner, error) {
	c := access.From(r.Context())
	if c == nil {
		return localOwner(), nil
	}
	var st syscall.Stat_t
	if !filepath.IsAbs(repo) || syscall.Stat(repo, &st) != nil || int(st.Uid) != c.UID {
		return taskOwner{}, fmt.Errorf("--repo %s: through the tine daemon, a task's repository is a directory of yours, by its absolute path (the nodes read it as root): %w", repo, tine.ErrPrivilege)
	}
	return ownerOf(c.UID, account.Lookup(c.UID, c.GID).Name), nil
}

// writeAPIJSON answers v as JSON with status code.
func writeAPIJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// writeAPIError answers err as the API does: its kind's status and code.
func writeAPIError(w http.ResponseWriter, err error) {
	k := errcode.Of(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(k.Status)
	json.NewEncoder(w).Encode(map[string]string{"error": strings.TrimSpace(err.Error()), "code": k.Code})
}

// fleetStatus is what tine tasks and GET /v1/fleet show.
type fleetStatus struct {
	Nodes []fleet.Node   `json:"nodes"`
	Tasks []*fleet.Task  `json:"tasks"`
	Queue map[string]int `json:"queue"` // tasks by state
}

// status gathers the fleet's nodes and tasks.
func status(ctx context.Context, f *fleet.Fleet) (*fleetStatus, error) {
	return statusFor(ctx, f, nil)
}

// statusFor gathers the fleet's nodes and the tasks of who (nil: every
// task).
func statusFor(ctx context.Context, f *fleet.Fleet, who *taskOwner) (*fleetStatus, error) {
	nodes, err := f.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	var tasks []*fleet.Task
	if who == nil {
		tasks, err = f.Tasks(ctx)
	} else {
		tasks, err = f.TasksOf(ctx, who.UID, who.Name)
	}
	if err != nil {
		return nil, err
	}
	st := &fleetStatus{Nodes: nodes, Tasks: tasks, Queue: map[string]int{}}
	for _, t := range tasks {
		st.Queue[t.State]++
	}
	if st.Nodes == nil {
		st.Nodes = []fleet.Node{}
	}
	if st.Tasks == nil {
		st.Tasks = []*fleet.Task{}
	}
	return st, nil
}
