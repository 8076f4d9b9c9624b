// Package layout names every path under tine's state directory. It is the
// one place those paths are built: the engine, the runtime, the control
// plane, the daemon and the dashboard all ask it, none joins names onto the
// state directory itself.
//
// The table ($TINE_HOME is the state directory; <ws>, <r>, <l>, <g>, <v>
// are ids):
//
//	$TINE_HOME/tine.db                          Store: the store (a SQLite database)
//	$TINE_HOME/config.toml                      Config: [store] url, when the store is on a server instead
//	$TINE_HOME/store-id                         StoreID: the id of the store the workspaces below were made with
//	$TINE_HOME/quarantine/                      Quarantine: directories the store had no record of, moved aside
//	$TINE_HOME/trash/<time>-<kind>-<backend>-<ws>-<name>  Trash: what a release or discard committed to deleting, deleted in the background
//	$TINE_HOME/probes.json                      Probes: remembered backend probes, per filesystem and uid
//	$TINE_HOME/history.jsonl                    History: one JSON line per resolved group
//	$TINE_HOME/token                            Token: the bearer token of tine serve's TCP listener
//	$TINE_HOME/ctl/tine.sock                    Socket: tine serve's unix socket (Control is ctl/)
//	$TINE_HOME/workspaces.lock                  WorkspacesLock: held by init and release
//	$TINE_HOME/workspaces/<ws>.lock             Workspace.Lock: held by every command that changes the workspace
//	$TINE_HOME/workspaces/<ws>/                 Workspace.Dir
//	  workspace.json                            Workspace.Record: the workspace's manifest
//	  versions/<v>.json                         Workspace.Version: a version's manifest
//	  discarded/<r>.json                        Workspace.Discarded: a discarded run's manifest
//	  manifest.lock                             Workspace.ManifestLock: held while manifests are written
//	  judge-weights.json                        Workspace.JudgeWeights: the heuristic judge's learned weights
//	  init.json                                 Workspace.InitJournal: an init in progress
//	  release.json                              Workspace.ReleaseJournal: a release in progress
//	  release/pending                           Workspace.ReleasePending: present while a release is unfinished
//	  unfinished                                Workspace.Unfinished: present while a command holds the workspace's lock, and after one that died
//	  swept                                     Workspace.Swept: the boot id of the last whole sweep of the workspace
//	  making/<op>-<id>.json                     Workspace.Making: the runs and layers a fork, checkpoint, rollback or promote creates before it records them
//	  layers/<l>/                               Workspace.Layer: an immutable layer
//	  groups/<g>/                               Workspace.Group: a fork group (see Group)
//	  runs/<r>/                                 Workspace.Run: a run (see Run)
//
// A run's directory (Run):
//
//	run.json        Record: the run's manifest
//	base            Base: the version its view was made from
//	view/ upper/ work/  View, Upper, Work: the run's files (the backend decides which exist)
//	merge.json      MergeJournal: a merge into this run in progress
//	seal.json       SealJournal: a seal-by-rename in progress
//	sealed          Sealed: the last version sealed by copy from the run's view
//	sessions/       Sessions: tine exec pids without a supervisor
//	sup/            Sup: the supervisor's pid file, socket, log, adopted.json, egress.jsonl
//	logs/<svc>.log  Log: service logs
//	cap/            Cap: the run's capability token and control socket, bound into the run
//	scratch/        Scratch: the run's private temporary and cache directories
//	home/           Home: the overlay upper of a confined run's home directory
//	cell.json       Cell: what a capability cell was asked and did
//	turn            Turn: present while an agent's turn runs
//	queued-forks.json  QueuedForks: forks asked for during a turn
//
// A group's directory (Group): group.json (Record), report.json,
// summary.json, resolution.json, <run>.agent.log and <run>.test.log.
package layout

import "path/filepath"

// Layout is a state directory.
type Layout struct{ root string }

// New returns the layout of the state directory home, which should be
// absolute.
func New(home string) Layout { return Layout{root: home} }

// Root returns the state directory.
func (l Layout) Root() string { return l.root }

// Store is the store's database.
func (l Layout) Store() string { return filepath.Join(l.root, "tine.db") }

// Config is the state directory's configuration file: its [store] table
// says where the store is when it is not Store (see package store).
func (l Layout) Config() string { return filepath.Join(l.root, "config.toml") }

// StoreID is the file naming the store the workspaces were made with.
func (l Layout) StoreID() string { return filepath.Join(l.root, "store-id") }

// Quarantine is where directories the store has no record of are moved.
func (l Layout) Quarantine() string { return filepath.Join(l.root, "quarantine") }

// Trash is where a committed release or discard renames what it deletes,
// so the command returns at once and the deletion runs in the background
// (the daemon, tine gc). It is on the state directory's filesystem; whoever
// empties it holds a lock on the directory itself.
func (l Layout) Trash() string { return filepath.Join(l.root, "trash") }

// Probes remembers backend probes.
func (l Layout) Probes() string { return filepath.Join(l.root, "probes.json") }

// History is the log of resolved groups.
func (l Layout) History() string { return filepath.Join(l.root, "history.jsonl") }

// Token is the bearer token of the daemon's TCP listener.
func (l Layout) Token() string { return filepath.Join(l.root, "token") }

// UserTokens is the directory of the dashboard tokens the daemon hands
// to normal users, one file per uid (root's alone).
func (l Layout) UserTokens() string { return filepath.Join(l.root, "user-tokens") }

// Control is the daemon's directory.
func (l Layout) Control() string { return filepath.Join(l.root, "ctl") }

// Socket is the daemon's unix socket.
func (l Layout) Socket() string { return filepath.Join(l.Control(), "tine.sock") }

// WorkspacesLock is held by init and release.
func (l Layout) WorkspacesLock() string { return filepath.Join(l.root, "workspaces.lock") }

// Workspaces is the directory of every workspace's state.
func (l Layout) Workspaces() string { return filepath.Join(l.root, "workspaces") }

// Workspace returns the layout of workspace ws's state.
func (l Layout) Workspace(ws string) Workspace {
	return Workspace{dir: filepath.Join(l.Workspaces(), ws)}
}

// Run returns the layout of run r of workspace ws.
func (l Layout) Run(ws, r string) Run { return l.Workspace(ws).Run(r) }

// Group returns the layout of group g of workspace ws.
func (l Layout) Group(ws, g string) Group { return l.Workspace(ws).Group(g) }

// Workspace is one workspace's state directory.
type Workspace struct{ dir string }

// Dir is the workspace's state directory.
func (w Workspace) Dir() string { return w.dir }

// Lock is held by every command that changes the workspace.
func (w Workspace) Lock() string { return w.dir + ".lock" }

// Record is the workspace's manifest.
func (w Workspace) Record() string { return filepath.Join(w.dir, "workspace.json") }

// Versions holds the versions' manifests.
func (w Workspace) Versions() string { return filepath.Join(w.dir, "versions") }

// Version is version v's manifest.
func (w Workspace) Version(v string) string { return filepath.Join(w.Versions(), v+".json") }

// DiscardedDir holds discarded runs' manifests.
func (w Workspace) DiscardedDir() string { return filepath.Join(w.dir, "discarded") }

// Discarded is discarded run r's manifest.
func (w Workspace) Discarded(r string) string { return filepath.Join(w.DiscardedDir(), r+".json") }

// ManifestLock is held while manifests are written.
func (w Workspace) ManifestLock() string { return filepath.Join(w.dir, "manifest.lock") }

// JudgeWeights holds the heuristic judge's weights learned here.
func (w Workspace) JudgeWeights() string { return filepath.Join(w.dir, "judge-weights.json") }

// InitJournal is the journal of an init in progress.
func (w Workspace) InitJournal() string { return filepath.Join(w.dir, "init.json") }

// Unfinished is present while a command that changes the workspace runs
// and after one that died or warned: the next command sweeps the workspace.
func (w Workspace) Unfinished() string { return filepath.Join(w.dir, "unfinished") }

// Swept holds the boot id of the host when the workspace was last swept
// whole: after a reboot (another id) the next command sweeps it again.
func (w Workspace) Swept() string { return filepath.Join(w.dir, "swept") }

// ReleaseJournal is the journal of a release in progress.
func (w Workspace) ReleaseJournal() string { return filepath.Join(w.dir, "release.json") }

// ReleaseDir holds a release's scratch state.
func (w Workspace) ReleaseDir() string { return filepath.Join(w.dir, "release") }

// ReleasePending is present while a release is unfinished.
func (w Workspace) ReleasePending() string { return filepath.Join(w.ReleaseDir(), "pending") }

// Layers holds the workspace's layers.
func (w Workspace) Layers() string { return filepath.Join(w.dir, "layers") }

// MakingDir holds the making journals of commands creating directories
// they have not recorded yet.
func (w Workspace) MakingDir() string { return filepath.Join(w.dir, "making") }

// Making is the making journal named name.
func (w Workspace) Making(name string) string { return filepath.Join(w.MakingDir(), name+".json") }

// Layer is layer l's directory.
func (w Workspace) Layer(l string) string { return filepath.Join(w.Layers(), l) }

// Runs holds the workspace's runs.
func (w Workspace) Runs() string { return filepath.Join(w.dir, "runs") }

// Run returns run r's layout.
func (w Workspace) Run(r string) Run { return Run{dir: filepath.Join(w.Runs(), r)} }

// Groups holds the workspace's groups.
func (w Workspace) Groups() string { return filepath.Join(w.dir, "groups") }

// Group returns group g's layout.
func (w Workspace) Group(g string) Group { return Group{dir: filepath.Join(w.Groups(), g)} }

// Run is one run's directory.
type Run struct{ dir string }

// Dir is the run's directory.
func (r Run) Dir() string { return r.dir }

// Record is the run's manifest.
func (r Run) Record() string { return filepath.Join(r.dir, "run.json") }

// Base names the version the run's view was made from.
func (r Run) Base() string { return filepath.Join(r.dir, "base") }

// View is where a backend mounts or keeps the run's files.
func (r Run) View() string { return filepath.Join(r.dir, "view") }

// Sealed names the last version sealed by copy from the run's view, which
// the next seal by copy stacks on (layer.Incremental).
func (r Run) Sealed() string { return filepath.Join(r.dir, "sealed") }

// MergeJournal is the journal of a merge into the run.
func (r Run) MergeJournal() string { return filepath.Join(r.dir, "merge.json") }

// MergeScratch is a merge's scratch directory called id.
func (r Run) MergeScratch(id string) string { return filepath.Join(r.dir, "merge-"+id) }

// Frozen records who froze the run's processes, while they are frozen
// (supervisor.Freeze).
func (r Run) Frozen() string { return filepath.Join(r.dir, "frozen.json") }

// SealJournal is the journal of a seal by rename.
func (r Run) SealJournal() string { return filepath.Join(r.dir, "seal.json") }

// Sessions holds the pids of tine exec sessions without a supervisor.
func (r Run) Sessions() string { return filepath.Join(r.dir, "sessions") }

// Sup is the supervisor's directory.
func (r Run) Sup() string { return filepath.Join(r.dir, "sup") }

// Adopted lists the processes forked live into the run.
func (r Run) Adopted() string { return filepath.Join(r.Sup(), "adopted.json") }

// LiveChoices says how a live fork carried each of the parent's services
// into the run (engine.LiveChoice).
func (r Run) LiveChoices() string { return filepath.Join(r.Sup(), "live.json") }

// Hidden lists the paths outside the workspace kept from the run's
// processes besides the usual (a holdout's files; engine.ForkOptions.Hide).
func (r Run) Hidden() string { return filepath.Join(r.dir, "hidden.json") }

// Logs holds the services' logs.
func (r Run) Logs() string { return filepath.Join(r.dir, "logs") }

// Log is service svc's log.
func (r Run) Log(svc string) string { return filepath.Join(r.Logs(), svc+".log") }

// Cap holds the run's capability token and control socket.
func (r Run) Cap() string { return filepath.Join(r.dir, "cap") }

// CapToken is the run's capability token.
func (r Run) CapToken() string { return filepath.Join(r.Cap(), "token") }

// Socket is the run's control socket.
func (r Run) Socket() string { return filepath.Join(r.Cap(), "tine.sock") }

// Scratch holds the run's private temporary and cache directories.
func (r Run) Scratch() string { return filepath.Join(r.dir, "scratch") }

// Home is the upper layer of a confined run's home directory.
func (r Run) Home() string { return filepath.Join(r.dir, "home") }

// Cell records a capability cell.
func (r Run) Cell() string { return filepath.Join(r.dir, "cell.json") }

// Turn is present while an agent's turn runs.
func (r Run) Turn() string { return filepath.Join(r.dir, "turn") }

// QueuedForks lists forks asked for during a turn.
func (r Run) QueuedForks() string { return filepath.Join(r.dir, "queued-forks.json") }

// Display is present when the run was started with a display of its own
// that tine.toml does not ask for (tine start --display); its forks get
// one too.
func (r Run) Display() string { return filepath.Join(r.dir, "display") }

// DisplayActive is present while a fork's display may be stopped when
// idle: it holds the idle timeout, and its modification time is the
// display's last use (a screenshot, input, a VNC client leaving).
func (r Run) DisplayActive() string { return filepath.Join(r.dir, "display-active") }

// DisplayIdle is present while a fork's display is stopped for being
// idle: when, after how long, and the services stopped (JSON).
func (r Run) DisplayIdle() string { return filepath.Join(r.dir, "display-idle.json") }

// Group is one fork group's directory.
type Group struct{ dir string }

// Dir is the group's directory.
func (g Group) Dir() string { return g.dir }

// Record is the group's manifest.
func (g Group) Record() string { return filepath.Join(g.dir, "group.json") }

// Report is fork-run's report of the group.
func (g Group) Report() string { return filepath.Join(g.dir, "report.json") }

// Summary is fork-run's summary of the group.
func (g Group) Summary() string { return filepath.Join(g.dir, "summary.json") }

// Resolution is how the group was resolved.
func (g Group) Resolution() string { return filepath.Join(g.dir, "resolution.json") }

// AgentLog is run r's agent log.
func (g Group) AgentLog(r string) string { return filepath.Join(g.dir, r+".agent.log") }

// TestLog is run r's test log.
func (g Group) TestLog(r string) string { return filepath.Join(g.dir, r+".test.log") }

// WorkspaceAt returns the layout of the workspace state directory dir, for
// code that walks the workspaces directory.
func WorkspaceAt(dir string) Workspace { return Workspace{dir: dir} }
