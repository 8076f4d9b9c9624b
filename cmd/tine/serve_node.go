package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/dashboard"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/errcode"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/httpapi"
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
}

// addNodeFlags adds the node flags to serve's command c.
func addNodeFlags(c *cobra.Command, n *nodeFlags) {
	f := c.Flags()
	f.StringVar(&n.name, "node", "", "serve as this node of a fleet (the store must be PostgreSQL's): register, heartbeat and take queued tasks")
	f.IntVar(&n.capacity, "capacity", 1, "with --node: tasks run at once (0: serve the fleet's API, take no tasks)")
	f.DurationVar(&n.beat, "heartbeat", fleet.DefaultBeat, "with --node: heartbeat period; a node silent for 3 periods is lost")
	f.StringVar(&n.tasksDir, "tasks-dir", "", "with --node: where tasks' workspaces are made (default: the state directory's path with -tasks appended)")
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
	nd := &node{f: f, e: e, name: n.name, done: make(chan error, 1)}
	if n.name == "" {
		nd.done <- nil
		return nd, nil
	}
	if n.tasksDir == "" {
		n.tasksDir = filepath.Clean(e.Home()) + "-tasks"
	}
	if n.address == "" && listen != "" {
		n.address = "http://" + listen
	}
	info := fleet.NodeInfo{Name: n.name, Address: n.address, Capacity: n.capacity, Beat: n.beat,
		Backends: backendNames(), LiveFork: liveForkEngines(ctx)}
	go func() {
		nd.done <- f.Serve(ctx, fleet.NodeConfig{Info: info, Run: fleet.EngineRunner(e, f, n.name, n.tasksDir), Say: say})
	}()
	return nd, nil
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

// dashboardStatus is the fleet's nodes and tasks for the dashboard's
// fleet page; nil when there is no fleet.
func (nd *node) dashboardStatus() dashboard.FleetStatus {
	if nd == nil {
		return nil
	}
	return func(ctx context.Context) ([]fleet.Node, []*fleet.Task, error) {
		st, err := status(ctx, nd.f)
		if err != nil {
			return nil, nil, err
		}
		return st.Nodes, st.Tasks, nil
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

// guard answers GET /v1/fleet (the fleet's nodes and tasks: for people
// who see every workspace, with the bearer token on TCP) and refuses a
// request of such a person about a run whose workspace lives on another
// node, with 421 and that node's name and address: its files, processes
// and mounts are there.
func (nd *node) guard(token string, next http.Handler) http.Handler {
	if nd == nil {
		return next
	}
	mux := http.NewServeMux()
	people := func(h http.HandlerFunc) http.Handler { return httpapi.RequireToken(token, httpapi.PersonOnly(h)) }
	mux.Handle("GET /v1/fleet", people(nd.fleetStatus))
	mux.Handle("POST /v1/fleet/tasks", people(nd.submitTasks))
	mux.Handle("GET /v1/fleet/tasks/{id}", people(nd.task))
	if nd.name != "" {
		mux.Handle("/v1/runs/{ref}", httpapi.RequireToken(token, nd.home(next)))
		mux.Handle("/v1/runs/{ref}/", httpapi.RequireToken(token, nd.home(next)))
	}
	mux.Handle("/", next)
	return mux
}

// fleetStatus answers the fleet's nodes and tasks.
func (nd *node) fleetStatus(w http.ResponseWriter, r *http.Request) {
	st, err := status(r.Context(), nd.f)
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
	sub, err := taskSpecs(r.Context(), req)
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
	t, err := nd.f.Task(r.Context(), r.PathValue("id"))
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeAPIJSON(w, http.StatusOK, t)
}

// writeAPIJSON answers v as JSON with status code.
func writeAPIJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// home passes a request about a run on this node (or on none) to next,
// and answers one about a run on another node with where it lives.
func (nd *node) home(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !httpapi.SeesAll(r) {
			next.ServeHTTP(w, r) // the API shows them their own workspaces alone
			return
		}
		ref, err := nd.e.FindRun(r.Context(), r.PathValue("ref"))
		if err != nil {
			next.ServeHTTP(w, r) // the API says what is wrong with ref
			return
		}
		home, err := nd.f.Home(r.Context(), ref.Workspace.ID)
		if err != nil {
			writeAPIError(w, err)
			return
		}
		if home == "" || home == nd.name {
			next.ServeHTTP(w, r)
			return
		}
		var addr string
		if n, err := nd.f.Node(r.Context(), home); err == nil {
			addr = n.Address
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMisdirectedRequest)
		json.NewEncoder(w).Encode(map[string]string{
			"error":   fmt.Sprintf("run %s lives on node %s (workspace %s); ask that node%s", ref.Run.Name, home, ref.Workspace.Name, at(addr)),
			"code":    "other_node",
			"node":    home,
			"address": addr,
		})
	})
}

// at is " at ADDR", or "" for no address.
func at(addr string) string {
	if addr == "" {
		return ""
	}
	return " at " + addr
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
	nodes, err := f.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	tasks, err := f.Tasks(ctx)
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
