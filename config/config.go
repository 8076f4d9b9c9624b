package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
)

// FileName is the name of the configuration file at a workspace's root.
const FileName = "tine.toml"

// DefaultReadyTimeout bounds how long a service may take to become ready.
const DefaultReadyTimeout = 30 * time.Second

// Config is the contents of tine.toml. The zero Config (no file) declares
// no services, no limits and a shared network.
type Config struct {
	Network  Network   `toml:"network"`
	Limits   Limits    `toml:"limits"`
	Services []Service `toml:"service"`
}

// Network says whether each run gets its own network namespace and address.
type Network struct {
	Isolate bool `toml:"isolate"`
}

// Limits are optional resource limits of each run's cgroup; empty means
// unlimited.
type Limits struct {
	Memory string  `toml:"memory"` // bytes with an optional unit: "512M", "2G"
	CPU    float64 `toml:"cpu"`    // cores, e.g. 1.5
	Pids   int64   `toml:"pids"`
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
}

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

// Load reads the tine.toml in dir. A missing file is the zero Config; a
// file that does not parse, has keys tine does not know (typos) or
// declares something impossible is an error naming the file.
func Load(dir string) (*Config, error) {
	path := filepath.Join(dir, FileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, err
	}
	c, err := Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse reads a tine.toml document. Errors wrap tine.ErrInvalid.
func Parse(doc string) (*Config, error) {
	var c Config
	md, err := toml.Decode(doc, &c)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", oneLine(err), tine.ErrInvalid)
	}
	if un := md.Undecoded(); len(un) > 0 {
		return nil, fmt.Errorf("unknown key %q: %w", un[0].String(), tine.ErrInvalid)
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", err, tine.ErrInvalid)
	}
	return &c, nil
}

func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func (c *Config) check() error {
	if c.Limits.CPU < 0 || c.Limits.Pids < 0 {
		return errors.New("limits must not be negative")
	}
	if _, err := c.Limits.MemoryBytes(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i := range c.Services {
		s := &c.Services[i]
		if err := s.check(); err != nil {
			return err
		}
		if seen[s.Name] {
			return fmt.Errorf("service %q declared twice", s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

func (s *Service) check() error {
	if !tine.ValidName(s.Name) {
		return fmt.Errorf("service name %q: use 1-64 letters, digits, '.', '_' or '-'", s.Name)
	}
	if strings.TrimSpace(s.Command) == "" {
		return fmt.Errorf("service %q has no command", s.Name)
	}
	if s.Cwd != "" && !filepath.IsLocal(s.Cwd) {
		return fmt.Errorf("service %q: cwd %q must be a relative path inside the workspace", s.Name, s.Cwd)
	}
	if s.Ready.Port < 0 || s.Ready.Port > 65535 {
		return fmt.Errorf("service %q: ready port %d out of range", s.Name, s.Ready.Port)
	}
	if s.Ready.Port != 0 && s.Ready.Command != "" {
		return fmt.Errorf("service %q: give ready.port or ready.command, not both", s.Name)
	}
	if s.Ready.Timeout.Duration < 0 {
		return fmt.Errorf("service %q: negative ready timeout", s.Name)
	}
	switch s.Restart {
	case "":
		s.Restart = RestartNo
	case RestartNo, RestartOnFailure, RestartAlways:
	default:
		return fmt.Errorf("service %q: restart %q: use no, on-failure or always", s.Name, s.Restart)
	}
	return nil
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
