package config

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/internal/lazyre"
	"github.com/tinehq/tine/secrets"
)

// FileName is the name of the configuration file at a workspace's root.
const FileName = "tine.toml"

// DefaultReadyTimeout bounds how long a service may take to become ready.
const DefaultReadyTimeout = 30 * time.Second

// Config is the contents of tine.toml. Load, LoadFile and Parse apply the
// defaults of every table; Default is the Config of a workspace without
// the file: no services, no limits, the host's network for sources and
// one of their own for forks, and the defaults of fork-run.
//
// Problems in [network], [limits] and [[service]] values are errors: a
// run cannot start without its services. Problems in the tables of
// fork-run ([fork], [agent.NAME], [judge.llm], [[account]]) and keys tine
// does not know, anywhere, are Warnings instead: tine ignores the key or
// uses the default, and the caller shows the warnings to the user.
type Config struct {
	Network  Network          `toml:"network"`
	Secrets  Secrets          `toml:"secrets"`
	Confine  Confine          `toml:"confine"`
	Effects  Effects          `toml:"effects"`
	Limits   Limits           `toml:"limits"`
	Merge    Merge            `toml:"merge"`
	Display  Display          `toml:"display"`
	Services []Service        `toml:"service"`
	Fork     Fork             `toml:"fork"`
	Agents   map[string]Agent `toml:"agent"` // by name; see Config.Agent for the built-in ones
	Judge    JudgeConfig      `toml:"judge"`
	Accounts []Account        `toml:"account"`
	// Prices are [prices]: model (or model-name prefix) → price, added to
	// or replacing tine's built-in ones.
	Prices map[string]Price `toml:"prices"`

	// Warnings are the problems tine worked around, by line.
	Warnings []Warning `toml:"-"`
}

// Default is the Config of a workspace without tine.toml.
func Default() *Config {
	return &Config{Fork: DefaultFork(), Judge: JudgeConfig{LLM: DefaultLLMJudge("")}}
}

// Network says which runs get a network namespace and address of their
// own, and what forks with one may reach.
type Network struct {
	// Isolate gives every run one, the source too.
	Isolate bool `toml:"isolate"`
	// ForkNetwork is "own" (the default: each fork has a network of its
	// own, held by its egress policy) or "host" (forks share the host's,
	// unrestricted, as the source does unless Isolate).
	ForkNetwork string `toml:"fork_network"`
	// Egress lists what forks may reach besides the preset (the agents'
	// APIs and the workspace's package registries): "host[:port]",
	// "*.domain[:port]", "a.b.c.d[/bits][:port]".
	Egress []string `toml:"egress"`
	// ForkEgress is "deny" (the default: forks reach only the preset and
	// Egress, every other connection refused and recorded) or "open".
	ForkEgress string `toml:"fork_egress"`
	// Resolvers are the name servers (ip[:port]) the forks' resolver asks;
	// default those of /etc/resolv.conf.
	Resolvers []string `toml:"resolvers"`
	// HostPorts are ports of the host's loopback that a run with a network
	// of its own reaches at its own 127.0.0.1 (a local model proxy, a
	// mock API): nothing else of the host's loopback is reachable there.
	HostPorts []int `toml:"host_ports"`
	// SandboxFallback is what a normal user's tine exec without the daemon
	// does when a fork's network of its own cannot be set up in its
	// sandbox: "host" (the default: the command runs in the host's network,
	// unrestricted, and that is said and recorded) or "refuse" (it does not
	// run: exit status 126).
	SandboxFallback string `toml:"sandbox_fallback"`
}

// Effects is [effects]: the commands `tine effect run` may ask the daemon
// to run for a source (after a person approves), by their first word.
type Effects struct {
	Commands []string `toml:"commands"`
	// FromForks is what a fork's request for an effect gets: "refuse"
	// (the default) or "after_promotion", which records it and asks a
	// person for it once the fork is promoted (the group's policy).
	FromForks string `toml:"from_forks"`
}

// Confine is [confine]: what a fork may write besides its workspace, /tmp,
// /dev and the owner's caches and agent state (paths relative to the
// workspace path or absolute), or off = true for no confinement at all
// (no Landlock, no seccomp, the state directory visible).
type Confine struct {
	Writable []string `toml:"writable"`
	Off      bool     `toml:"off"`
}

// Secrets is [secrets]: the environment variables (names or patterns such
// as "*_TOKEN") and files ("~/.aws", ".env", "/etc/key") that forks do not
// get, besides tine's defaults unless defaults = false, and the ones they
// inherit even so.
type Secrets struct {
	Env      []string `toml:"env"`
	Files    []string `toml:"files"`
	Inherit  []string `toml:"inherit"`
	Defaults *bool    `toml:"defaults"`
}

// Policy returns the secrets with tine's defaults added (unless turned off).
func (s Secrets) Policy() secrets.Policy {
	p := secrets.Policy{Env: slices.Clone(s.Env), Files: slices.Clone(s.Files), Inherit: slices.Clone(s.Inherit)}
	if s.Defaults == nil || *s.Defaults {
		p.Env = append(p.Env, secrets.DefaultEnv...)
		p.Inherit = append(p.Inherit, secrets.DefaultInherit...)
		for _, f := range secrets.DefaultFiles {
			p.Files = append(p.Files, "~/"+f)
		}
	}
	return p
}

func (f Effects) check() error {
	if f.FromForks != "" && f.FromForks != "refuse" && f.FromForks != "after_promotion" {
		return &keyError{[]string{"effects", "from_forks"}, fmt.Errorf("effects: from_forks %q is not refuse or after_promotion", f.FromForks)}
	}
	return nil
}

func (s Secrets) check() error {
	for _, pat := range s.Env {
		if _, err := path.Match(pat, ""); err != nil || pat == "" || strings.Contains(pat, "=") {
			return &keyError{[]string{"secrets", "env"}, fmt.Errorf("secrets: env %q is not a variable name or pattern", pat)}
		}
	}
	for _, f := range s.Files {
		if strings.TrimSpace(f) == "" || f == "~" || f == "/" {
			return &keyError{[]string{"secrets", "files"}, fmt.Errorf("secrets: files %q is not a file to hide", f)}
		}
	}
	return nil
}

// EgressRules returns the parsed Egress entries.
func (n Network) EgressRules() ([]egress.Rule, error) { return egress.ParseRules(n.Egress) }

// ConfinesForks reports whether forks with a network of their own get an
// egress policy.
func (n Network) ConfinesForks() bool { return n.ForkEgress != "open" }

// FallsBackToHost reports whether a fork whose network of its own cannot
// be set up in tine exec's sandbox runs in the host's network instead.
func (n Network) FallsBackToHost() bool { return n.SandboxFallback != "refuse" }

// Own reports whether a run of role has a network of its own.
func (n Network) Own(role tine.Role) bool {
	return n.Isolate || role == tine.RoleFork && n.ForkNetwork != "host"
}

// Limits are the resource limits of each run's cgroup ([limits]); zero
// means unlimited. A fork gets tine's defaults (Of) for the memory and
// pids limits the file leaves out; the source stays unlimited there.
type Limits struct {
	Memory string  `toml:"memory"` // bytes with an optional unit: "512M", "2G"
	CPU    float64 `toml:"cpu"`    // cores, e.g. 1.5
	Pids   int64   `toml:"pids"`   // tasks: processes and threads
	// Set says which of memory and pids tine.toml gave, 0 included.
	Set LimitsSet `toml:"-"`
}

// LimitsSet records which [limits] keys tine.toml gave.
type LimitsSet struct{ Memory, Pids bool }

// Defaults of a fork's [limits], for the keys tine.toml leaves out.
const (
	// DefaultForkPids bounds a fork's tasks: a fork bomb stops there
	// instead of exhausting the machine's pids, while an agent with its
	// builds and test runners (thousands of threads) stays far below.
	DefaultForkPids = 4096
	// DefaultForkMemoryDivisor: a fork may use 1/DefaultForkMemoryDivisor
	// of the machine's memory, so that one fork cannot push the host into
	// its out-of-memory killer.
	DefaultForkMemoryDivisor = 2
)

// Given returns the limits tine.toml gives (zero: unlimited).
func (l Limits) Given() cgroup.Limits {
	mem, _ := l.MemoryBytes() // checked when the file was read
	return cgroup.Limits{MemoryBytes: mem, CPU: l.CPU, Pids: l.Pids}
}

// Of returns the limits of the cgroup of a run of role, on a machine with
// ram bytes of memory (0: unknown, no default): what tine.toml gives and,
// for a fork, tine's defaults for the pids and memory it leaves out
// (DefaultForkPids tasks, 1/DefaultForkMemoryDivisor of ram); "pids = 0"
// or "memory = "0"" lifts them. The source gets only what tine.toml says:
// it is the person's own workspace, where their builds and tools must run
// as in their own shell.
func (l Limits) Of(role tine.Role, ram int64) cgroup.Limits {
	out := l.Given()
	if role != tine.RoleFork {
		return out
	}
	if !l.Set.Pids {
		out.Pids = DefaultForkPids
	}
	if !l.Set.Memory {
		out.MemoryBytes = ram / DefaultForkMemoryDivisor
	}
	return out
}

// Service is a long-running process a run starts: a dev server, a
// database, a watcher.
type Service struct {
	Name    string            `toml:"name"`
	Command string            `toml:"command"` // run by sh -c
	Cwd     string            `toml:"cwd"`     // relative to the workspace path
	Env     map[string]string `toml:"env"`
	Ready   Ready             `toml:"ready"`
	Restart string            `toml:"restart"` // "no" (default), "on-failure" or "always"
	// Live is how a live fork (tine fork --live auto, ptrace or criu)
	// carries the service into its forks: "auto" (default), "criu",
	// "ptrace" or "restart" (never live: started fresh in each fork).
	Live string `toml:"live"`
	// Display starts the service once the run's display is up, with
	// DISPLAY set to it (a browser on the dev server's page, an editor),
	// and turns the run's display on.
	Display bool `toml:"display"`
}

// How a live fork carries a service (Service.Live). Auto forks a
// single-threaded process by ptrace (cheapest), any other tree by CRIU,
// and restarts what neither can carry.
const (
	LiveAuto    = "auto"
	LiveCRIU    = "criu"
	LivePtrace  = "ptrace"
	LiveRestart = "restart"
)

// Ready says how to tell that a service is up: a TCP port that accepts
// connections, or a command that exits 0. With neither, a service is ready
// once started.
type Ready struct {
	Port    int      `toml:"port"`
	Command string   `toml:"command"`
	Timeout Duration `toml:"timeout"`
}

// Duration is a time.Duration written as "30s" or "2m".
type Duration struct{ time.Duration }

// UnmarshalText parses a duration such as "30s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// Restart policies of a service.
const (
	RestartNo        = "no"
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
)

// Load reads the tine.toml in dir. A missing file is Default(). Errors
// and warnings name the file by its path.
func Load(dir string) (*Config, error) {
	c, err := LoadFile(filepath.Join(dir, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	return c, err
}

// LoadFile reads the configuration file at path, which must exist: it is
// for a file named on the command line. Errors and warnings name the file
// by path.
func LoadFile(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(string(b), path)
}

// Parse reads a tine.toml document. Errors and warnings name it
// "tine.toml". Errors, one line each, wrap tine.ErrInvalid.
func Parse(doc string) (*Config, error) { return parse(doc, FileName) }

// services are the tables Config decodes with the toml package, whose
// values must be valid.
type services struct {
	Network  Network   `toml:"network"`
	Secrets  Secrets   `toml:"secrets"`
	Confine  Confine   `toml:"confine"`
	Effects  Effects   `toml:"effects"`
	Limits   Limits    `toml:"limits"`
	Merge    Merge     `toml:"merge"`
	Display  Display   `toml:"display"`
	Services []Service `toml:"service"`
}

func parse(doc, file string) (*Config, error) {
	var raw map[string]any
	if _, err := toml.Decode(doc, &raw); err != nil {
		return nil, decodeError(doc, file, err)
	}
	var s services
	md, err := toml.Decode(doc, &s)
	if err != nil {
		return nil, decodeError(doc, file, err)
	}
	c := Default()
	c.Network, c.Secrets, c.Confine, c.Effects, c.Limits, c.Merge, c.Services = s.Network, s.Secrets, s.Confine, s.Effects, s.Limits, s.Merge, s.Services
	c.Display = s.Display
	c.Limits.Set = LimitsSet{Memory: md.IsDefined("limits", "memory"), Pids: md.IsDefined("limits", "pids")}
	d := &decoder{file: file, pos: scan(doc)}
	if err := c.check(); err != nil {
		return nil, d.fail(err)
	}
	d.unknown(md.Undecoded())
	d.sections(c, raw)
	slices.SortStableFunc(d.warnings, func(a, b Warning) int { return cmp.Compare(lineOrder(a), lineOrder(b)) })
	c.Warnings = d.warnings
	return c, nil
}

// lineOrder sorts warnings by line, those without one last.
func lineOrder(w Warning) int {
	if w.Line <= 0 {
		return math.MaxInt
	}
	return w.Line
}

// unknown warns of the keys the toml package did not decode, outside the
// tables the decoder checks itself, and not under a key it warned of.
func (d *decoder) unknown(keys []toml.Key) {
	seen := map[string]int{}
	var warned []toml.Key
	for _, k := range keys {
		if slices.Contains(checked, k[0]) || slices.ContainsFunc(warned, func(w toml.Key) bool { return hasPrefix(k, w) }) {
			continue
		}
		s := k.String()
		d.warn(d.pos.nth(s, seen[s]), "unknown key %q (ignored)", s)
		seen[s]++
		warned = append(warned, k)
	}
}

func hasPrefix(k, prefix toml.Key) bool {
	return len(k) > len(prefix) && slices.Equal(k[:len(prefix)], prefix)
}

// keyError is an error in the value at an (indexed) key path: "service",
// "0", "cwd".
type keyError struct {
	path []string
	err  error
}

func (e *keyError) Error() string { return e.err.Error() }

func (e *keyError) Unwrap() error { return e.err }

// fail returns err, found by check, as an invalid-argument error naming
// the file and, if err is a keyError, the line.
func (d *decoder) fail(err error) error {
	line := 0
	if ke, ok := err.(*keyError); ok {
		line = d.pos.line(ke.path...)
	}
	return fmt.Errorf("%s: %w: %w", where(d.file, line), err, tine.ErrInvalid)
}

// decodeMessage matches the errors of the toml package that are not a
// ParseError: "toml: line 3 (last key \"a.b\"): incompatible types: ...".
var decodeMessage = lazyre.New(`^toml: (?:line (\d+) )?(?:\(last key "((?:[^"\\]|\\.)*)"\): )?(.*)$`)

// decodeError turns an error of the toml package reading doc into one line
// that names file and line and wraps tine.ErrInvalid.
func decodeError(doc, file string, err error) error {
	line, key, msg := 0, "", firstLine(err.Error())
	var pe toml.ParseError
	if errors.As(err, &pe) {
		line, key, msg = pe.Position.Line, pe.LastKey, strings.TrimSuffix(firstLine(pe.Message), ".")
		if line > 0 && pe.Position.Start >= 0 && pe.Position.Start <= len(doc) {
			// The line of the offending byte, not the one after a newline
			// the lexer already read.
			line = strings.Count(doc[:pe.Position.Start], "\n") + 1
		}
	} else if m := decodeMessage().FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		if k, err := strconv.Unquote(`"` + m[2] + `"`); err == nil {
			key = k
		}
		msg = m[3]
	}
	if key != "" {
		msg = key + ": " + msg
	}
	return fmt.Errorf("%s: %s: %w", where(file, line), msg, tine.ErrInvalid)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// check reports the first impossible value in [limits], [merge], [display] and [[service]] as
// a keyError, and fills in the default restart policy.
func (c *Config) check() error {
	if c.Limits.CPU < 0 || c.Limits.Pids < 0 {
		key := "cpu"
		if c.Limits.CPU >= 0 {
			key = "pids"
		}
		return &keyError{[]string{"limits", key}, errors.New("limits must not be negative")}
	}
	if _, err := c.Limits.MemoryBytes(); err != nil {
		return &keyError{[]string{"limits", "memory"}, err}
	}
	if err := c.Network.check(); err != nil {
		return err
	}
	if err := c.Secrets.check(); err != nil {
		return err
	}
	if err := c.Effects.check(); err != nil {
		return err
	}
	if err := c.Merge.check(); err != nil {
		return err
	}
	if err := c.Display.check(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i := range c.Services {
		s := &c.Services[i]
		at := func(key string, err error) error {
			return &keyError{[]string{"service", strconv.Itoa(i), key}, err}
		}
		if key, err := s.check(); err != nil {
			return at(key, err)
		}
		if seen[s.Name] {
			return at("name", fmt.Errorf("service %q declared twice", s.Name))
		}
		seen[s.Name] = true
	}
	return nil
}

func (n Network) check() error {
	if _, err := n.EgressRules(); err != nil {
		return &keyError{[]string{"network", "egress"}, err}
	}
	if n.ForkEgress != "" && n.ForkEgress != "deny" && n.ForkEgress != "open" {
		return &keyError{[]string{"network", "fork_egress"}, fmt.Errorf("fork_egress %q is not deny or open", n.ForkEgress)}
	}
	if n.SandboxFallback != "" && n.SandboxFallback != "host" && n.SandboxFallback != "refuse" {
		return &keyError{[]string{"network", "sandbox_fallback"}, fmt.Errorf("sandbox_fallback %q is not host or refuse", n.SandboxFallback)}
	}
	if n.ForkNetwork != "" && n.ForkNetwork != "own" && n.ForkNetwork != "host" {
		return &keyError{[]string{"network", "fork_network"}, fmt.Errorf("fork_network %q is not own or host", n.ForkNetwork)}
	}
	for _, r := range n.Resolvers {
		if _, err := n.resolver(r); err != nil {
			return &keyError{[]string{"network", "resolvers"}, fmt.Errorf("resolvers: %w", err)}
		}
	}
	return nil
}

// Upstream returns the resolvers as ip:port, port 53 unless given.
func (n Network) Upstream() []string {
	var out []string
	for _, r := range n.Resolvers {
		if ap, err := n.resolver(r); err == nil {
			out = append(out, ap.String())
		}
	}
	return out
}

func (Network) resolver(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Is4() {
		return ap, nil
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
		return netip.AddrPortFrom(a, 53), nil
	}
	return netip.AddrPort{}, fmt.Errorf("%q is not an IPv4 address with an optional port", s)
}

// check reports the first impossible value of s and its key.
func (s *Service) check() (key string, err error) {
	if !tine.ValidName(s.Name) {
		return "name", fmt.Errorf("service name %q: use 1-64 letters, digits, '.', '_' or '-'", s.Name)
	}
	if strings.TrimSpace(s.Command) == "" {
		return "command", fmt.Errorf("service %q has no command", s.Name)
	}
	if s.Cwd != "" && !filepath.IsLocal(s.Cwd) {
		return "cwd", fmt.Errorf("service %q: cwd %q must be a relative path inside the workspace", s.Name, s.Cwd)
	}
	if s.Ready.Port < 0 || s.Ready.Port > 65535 {
		return "ready", fmt.Errorf("service %q: ready port %d out of range", s.Name, s.Ready.Port)
	}
	if s.Ready.Port != 0 && s.Ready.Command != "" {
		return "ready", fmt.Errorf("service %q: give ready.port or ready.command, not both", s.Name)
	}
	if s.Ready.Timeout.Duration < 0 {
		return "ready", fmt.Errorf("service %q: negative ready timeout", s.Name)
	}
	switch s.Restart {
	case "":
		s.Restart = RestartNo
	case RestartNo, RestartOnFailure, RestartAlways:
	default:
		return "restart", fmt.Errorf("service %q: restart %q: use no, on-failure or always", s.Name, s.Restart)
	}
	switch s.Live {
	case "":
		s.Live = LiveAuto
	case LiveAuto, LiveCRIU, LivePtrace, LiveRestart:
	default:
		return "live", fmt.Errorf("service %q: live %q: use auto, criu, ptrace or restart", s.Name, s.Live)
	}
	return "", nil
}

// ReadyTimeout is the service's ready timeout or the default.
func (s *Service) ReadyTimeout() time.Duration {
	if s.Ready.Timeout.Duration > 0 {
		return s.Ready.Timeout.Duration
	}
	return DefaultReadyTimeout
}

// MemoryBytes parses the memory limit; 0 means unlimited.
func (l Limits) MemoryBytes() (int64, error) {
	if l.Memory == "" {
		return 0, nil
	}
	n, err := cgroup.ParseBytes(l.Memory)
	if err != nil {
		return 0, fmt.Errorf("limits.memory: %w", err)
	}
	return n, nil
}

// Service returns the service called name.
func (c *Config) Service(name string) (*Service, bool) {
	for i := range c.Services {
		if c.Services[i].Name == name {
			return &c.Services[i], true
		}
	}
	return nil, false
}

// WithBoundaryOf returns a copy of c whose boundary, what holds a fork's
// processes ([network], [secrets], [confine], [effects] and [limits]), is
// src's: a fork's own tine.toml may say how its services run, but code in
// the fork, which may write that file, cannot widen what confines it.
func (c *Config) WithBoundaryOf(src *Config) *Config {
	out := *c
	out.Network, out.Secrets, out.Confine, out.Effects, out.Limits = src.Network, src.Secrets, src.Confine, src.Effects, src.Limits
	return &out
}
