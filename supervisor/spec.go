package supervisor

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/confine"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/internal/account"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/internal/procfs"
	"github.com/tinehq/tine/internal/runenv"
	"github.com/tinehq/tine/secrets"
)

// ErrNotRunning means a run has no live supervisor.
var ErrNotRunning = errors.New("no supervisor is running")

// Spec says how to launch a run's supervisor.
type Spec struct {
	Run       string   `json:"run"`       // run id
	Hostname  string   `json:"hostname"`  // the run's name
	Dir       string   `json:"dir"`       // the supervisor's directory: socket, pid file, own log
	LogDir    string   `json:"log_dir"`   // where service logs go
	View      string   `json:"view"`      // host path of the run's files; "" when they are at Workspace
	Workspace string   `json:"workspace"` // the workspace path
	Net       bool     `json:"net"`       // a network namespace of its own
	Env       []string `json:"env"`       // base environment of services
	// Owner is who every process started in the run runs as (the
	// workspace's owner); nil or root keeps the supervisor's credentials.
	Owner *account.Account `json:"owner,omitempty"`
	// Control plane, visible inside the run under RunDir: the run's
	// capability directory (RunDir/cap, also RunDir/ctl), where the daemon
	// serves the run's own socket, and the tine binary (RunDir/bin/tine).
	// Control is the host directory of the people's socket, which the
	// supervisor hides from the run. Empty fields are skipped.
	Control string `json:"control,omitempty"`
	CapDir  string `json:"cap_dir,omitempty"`
	Binary  string `json:"binary,omitempty"`
	// Egress, for a run with a network of its own, is what it may reach;
	// nil leaves its network open. Every refusal is recorded in
	// EgressPath(Dir).
	Egress *egress.Policy `json:"egress,omitempty"`
	// HostPorts, for a run with a network of its own, are ports of the
	// host's loopback the run reaches at its own 127.0.0.1: the supervisor
	// listens there and connects each connection to the host's, through
	// the host's network namespace. HostNetFD is that namespace's fd, which
	// the launcher passes to every run with a network of its own: an exec
	// may ask for more host ports (Exec.HostPorts), and its resolver asks
	// upstream from there.
	HostPorts []int `json:"host_ports,omitempty"`
	HostNetFD int   `json:"host_net_fd,omitempty"`
	// Secrets, for a fork, are what its processes must not get: the
	// supervisor takes the secret variables out of every environment it
	// starts a process with and hides the secret files (Files absolute) in
	// the run's mount namespace. nil for a source.
	Secrets *secrets.Policy `json:"secrets,omitempty"`
	// Confine is how every process of the run is confined (Landlock,
	// seccomp); nil: not at all. Hide is what its mount namespace covers.
	Confine *confine.Spec `json:"confine,omitempty"`
	Hide    *Hide         `json:"hide,omitempty"`
	// Display, when the run has a display of its own, is its name (":0"),
	// set as DISPLAY in the environment of every process of the run.
	Display string `json:"display,omitempty"`
}

// Hide is what a run's mount namespace covers with empty tmpfs mounts.
type Hide struct {
	State string   `json:"state,omitempty"` // tine's state directory, covered but for Keep
	Keep  string   `json:"keep,omitempty"`  // the run's own directory in it
	Paths []string `json:"paths,omitempty"` // other workspaces
	// Private are paths kept from this run alone (a holdout test's files,
	// engine.ForkOptions.Hide): covered like Paths, and named in the
	// confinement applied (confine.Applied).
	Private []string `json:"private,omitempty"`
	Tmp     bool     `json:"tmp,omitempty"` // a /tmp of the run's own
	// Run covers the host's /run, where its services listen (systemd's
	// and D-Bus's sockets, a user's session bus and systemd --user, docker's):
	// a process that reaches one of them has something outside the run do
	// its bidding, and Landlock does not limit connecting to a socket. The
	// run keeps RunDir and the directory /etc/resolv.conf points into.
	Run bool `json:"run,omitempty"`
	// Dev gives the run a /dev of its own: a tmpfs holding the host's
	// null, zero, full, random, urandom, tty and ptmx, its pts, a private
	// shm and the fd links, and nothing else of the host's (no disk, loop,
	// console or tun device, no shared /dev/shm).
	Dev bool `json:"dev,omitempty"`
	// Writable, when set, makes every mount of the run's view read-only
	// but those at these paths (and below them), each made a mount of its
	// own when it is not one: a fork's Landlock paths and its log
	// directory (the rest of the run's own directory, its records and its
	// supervisor's files, goes read-only too; the supervisor writes its
	// own through a detached mount, privateDir). Landlock limits what may be written to files, not a
	// file's mode, owner, times or extended attributes, which root in a
	// fork could otherwise change anywhere (chmod u+s on the host's
	// programs); a read-only mount refuses those too.
	Writable []string `json:"writable,omitempty"`
	// Home, when set, is the owner's home, which the run sees with a
	// writable layer of its own on top (kept in HomeLayer, a directory the
	// supervisor makes): it reads the owner's files, caches and settings,
	// and what it writes there (a planted ~/.bashrc, a poisoned cache) stays
	// the run's.
	Home      string `json:"home,omitempty"`
	HomeLayer string `json:"home_layer,omitempty"`
	// Ephemeral keeps the home's layer and the temporary directories on
	// tmpfs mounts that last one command: what tine exec's sandbox without
	// root does (in a user namespace, and with a state directory that may
	// lie in the home it covers, where an overlay's layer cannot).
	Ephemeral bool `json:"ephemeral,omitempty"`
	// Scratch, for Ephemeral, is where the tmpfs of those layers are
	// mounted (a supervisor keeps them under RunDir).
	Scratch string `json:"scratch,omitempty"`
	// Secrets are files and directories of secrets the run is not given:
	// shown empty (a file as /dev/null, a directory as an empty read-only
	// tmpfs).
	Secrets []string `json:"secrets,omitempty"`
}

// HostPortsPath holds, while a command of tine exec's sandbox runs in run
// dir's network of its own (no supervisor), the ports of the host's
// loopback it reaches at its 127.0.0.1 (a supervisor's Status says its
// own).
func HostPortsPath(dir string) string { return filepath.Join(dir, "host-ports.json") }

// ConfinementPath holds, while the supervisor of dir runs, how its run is
// confined (confine.Applied, JSON).
func ConfinementPath(dir string) string { return filepath.Join(dir, "confinement.json") }

// processEnv is env as a process of the run gets it: without the run's
// secret variables, but those granted to the process (its account's own),
// and with DISPLAY set to the run's display when it has one.
func (s Spec) processEnv(env, granted []string) []string {
	if s.Display != "" {
		env = account.Setenv(env, "DISPLAY="+s.Display)
	}
	if s.Secrets == nil {
		return env
	}
	out, _ := s.Secrets.Strip(env, granted)
	return out
}

// EgressPath is where the supervisor of dir records its run's refused
// connections and names (egress.Record, one JSON object per line).
func EgressPath(dir string) string { return filepath.Join(dir, "egress.jsonl") }

// EgressPolicyPath holds, while the supervisor of dir runs, the egress
// policy it enforces (JSON); there is none when its network is open.
func EgressPolicyPath(dir string) string { return filepath.Join(dir, "egress-policy.json") }

// RunDir is where, inside every run, tine's control plane appears: the
// run's own socket of the daemon (ctl/tine.sock), the run's capability
// (cap/token) and a tine binary (bin/tine, first on PATH).
const RunDir = runenv.RunDir

// Service is a long-running process the supervisor starts and watches.
type Service struct {
	Name         string        `json:"name"`
	Command      string        `json:"command"` // run by sh -c
	Dir          string        `json:"dir"`     // absolute, inside the run
	Env          []string      `json:"env"`     // added to the base environment
	ReadyPort    int           `json:"ready_port,omitempty"`
	ReadySocket  string        `json:"ready_socket,omitempty"` // a unix socket (in the run) that accepts connections
	ReadyCommand string        `json:"ready_command,omitempty"`
	ReadyTimeout time.Duration `json:"ready_timeout,omitempty"`
	Restart      string        `json:"restart,omitempty"` // no, on-failure, always
	// Pid, when not 0, is the pid the service has in the run this one was
	// forked from: restarted in the fork, it gets the same pid when that
	// is free, so what it wrote about itself (PostgreSQL's
	// postmaster.pid, a daemon's pid file) names it, not another process
	// of the fork's pid namespace, which would make it refuse to start.
	Pid int `json:"pid,omitempty"`
}

// Service states.
const (
	StateStarting = "starting"
	StateReady    = "ready"
	StateExited   = "exited"  // ended with status 0 and is not restarted
	StateFailed   = "failed"  // ended otherwise, or never became ready
	StateStopped  = "stopped" // stopped by tine
)

// ServiceStatus is a supervised service as its supervisor reports it.
type ServiceStatus = tine.ServiceStatus

// ExecStatus is a command started by tine exec that still runs.
type ExecStatus struct {
	Pid  int      `json:"pid"`
	Args []string `json:"args"`
}

// Status is a snapshot of a supervisor.
type Status struct {
	Services []ServiceStatus `json:"services"`
	Execs    []ExecStatus    `json:"execs,omitempty"`
	Ports    []Port          `json:"ports,omitempty"`
	// HostPorts are the host's loopback ports forwarded into the run.
	HostPorts []int `json:"host_ports,omitempty"`
	// Display is the run's display (Spec.Display), "" when it was started
	// without one.
	Display string `json:"display,omitempty"`
}

// Port is a port of the run published on the host.
type Port struct {
	Port     int    `json:"port"`      // inside the run
	HostAddr string `json:"host_addr"` // where the host listens
}

// Exec is a command to start inside the run.
type Exec struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	// Tree makes the command the leader of a session of its own and its
	// whole process tree one unit: a SIGKILL sent to it, or the caller
	// hanging up, kills every process of the session and every descendant
	// (even those that started sessions of their own), and once the command
	// ends whatever it left running is killed, so its output streams close.
	// For agents and test commands; a plain exec leaves its background
	// processes alone.
	Tree bool `json:"tree,omitempty"`
	// Grant names variables of Env that the process keeps although they
	// are secrets of the run (an account's credentials for its agent).
	Grant []string `json:"grant,omitempty"`
	// Tty says the command's standard input is a terminal (the slave of a
	// pseudo-terminal the caller allocated): the command leads a session
	// of its own with it as its controlling terminal, so job control, ^C,
	// ^Z and window-size changes work in it as in a terminal emulator.
	Tty bool `json:"tty,omitempty"`
	// HostPorts are ports of the host's loopback that the command's agent
	// is pointed at (egress.AgentPorts of Env, filled in by Client.Exec on
	// the host): in a run with a network of its own the supervisor
	// forwards each (Spec.HostPorts) before the command starts.
	HostPorts []int `json:"host_ports,omitempty"`
	// Egress are the host-name rules of the APIs the command's agent is
	// pointed at elsewhere (egress.AgentRules of Env, filled in by
	// Client.Exec): a run with an egress policy allows them from then on.
	Egress []egress.Rule `json:"egress,omitempty"`
}

// request is one call on the socket; fds travel beside it.
type request struct {
	Op       string        `json:"op"`
	Exec     *Exec         `json:"exec,omitempty"`
	Services []Service     `json:"services,omitempty"`
	Names    []string      `json:"names,omitempty"` // for stop-services: the services to stop
	Port     int           `json:"port,omitempty"`
	HostAddr string        `json:"host_addr,omitempty"`
	Grace    time.Duration `json:"grace,omitempty"`
	Signal   int           `json:"signal,omitempty"`  // for exec: forward this signal
	NoWait   bool          `json:"no_wait,omitempty"` // for services: answer before the ready checks pass
}

// response is one answer line.
type response struct {
	Error    string          `json:"error,omitempty"`
	Pid      int             `json:"pid,omitempty"`
	Exit     *int            `json:"exit,omitempty"`
	Status   *Status         `json:"status,omitempty"`
	Services []ServiceStatus `json:"services,omitempty"`
}

// Files in a supervisor's directory.
const (
	sockName = "sock"
	pidName  = "pid"
	logName  = "supervisor.log"
)

// MaxSocketPath is the longest path a unix socket can be bound at on Linux
// (sun_path holds 108 bytes with the terminating NUL).
const MaxSocketPath = 107

// SocketPath is where the supervisor of dir listens.
func SocketPath(dir string) string { return filepath.Join(dir, sockName) }

// OwnNamespace is the path of a supervisor's namespace of kind ("mnt",
// "net", …) inside its own run: the supervisor is pid 1 of the run's pid
// namespace, whose /proc the run has.
func OwnNamespace(kind string) string { return "/proc/1/ns/" + kind }

// LogPath is the supervisor's own log.
func LogPath(dir string) string { return filepath.Join(dir, logName) }

// Pid returns the host process id of the supervisor of dir if it is alive.
// Alive is a proof, not a guess from a pid: the pid file names a process
// that has not ended (an unreaped zombie, as a SIGKILLed supervisor stays in
// a container without an init, is dead), that started when the recorded
// incarnation did (a recycled pid is not mistaken for it), and that answers
// on the supervisor's socket. recorded reports whether a pid file exists.
func Pid(dir string) (pid int, alive, recorded bool) {
	b, err := os.ReadFile(filepath.Join(dir, pidName))
	if err != nil {
		return 0, false, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false, true
	}
	pid, _ = strconv.Atoi(f[0])
	return pid, procfs.Alive("", pid, f[1]) && answers(SocketPath(dir)), true
}

// Forget removes the pid file and socket of a supervisor that is gone,
// and its records (ForgetRecords).
func Forget(dir string) {
	os.Remove(filepath.Join(dir, pidName))
	os.Remove(SocketPath(dir))
	ForgetRecords(dir)
}

// ForgetRecords removes what tine ps reads of the processes running in run
// dir (the egress policy, the confinement, the host ports), written by its
// supervisor or by tine exec's sandbox.
func ForgetRecords(dir string) {
	os.Remove(EgressPolicyPath(dir))
	os.Remove(ConfinementPath(dir))
	os.Remove(HostPortsPath(dir))
}

func writePid(dir string, pid int) error {
	return atomicfile.Write(filepath.Join(dir, pidName), []byte(strconv.Itoa(pid)+" "+StartTime(pid)+"\n"), 0o600)
}

// StartTime identifies a process incarnation (field 22 of /proc/PID/stat);
// "" when the process does not exist.
func StartTime(pid int) string {
	st, err := procfs.Read("", pid)
	if err != nil {
		return ""
	}
	return st.StartTime
}

func encodeSpec(s Spec) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// WriteConfinement records in dir (a supervisor's directory) how the
// processes of its run are confined: by c, on this kernel, with hidden and
// others covered (what Cover reported). tine ps reads it; Forget removes it.
func WriteConfinement(dir string, c *confine.Spec, hidden []string, others int) error {
	var r confine.Applied
	if c != nil {
		r = confine.Probe(*c)
	}
	r.Hidden, r.OtherWorkspaces = hidden, others
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return atomicfile.Write(ConfinementPath(dir), b, 0o644)
}
