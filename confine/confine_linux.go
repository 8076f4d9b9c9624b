package confine

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Probe says what of s this kernel can enforce.
func Probe(s Spec) Applied {
	r := Applied{Writable: s.Writable}
	if len(s.Writable) > 0 {
		if abi, err := llsys.LandlockGetABIVersion(); err == nil {
			r.Landlock = abi
		} else {
			r.Unavailable = append(r.Unavailable, "landlock: "+err.Error())
		}
	}
	if s.Seccomp {
		if seccomp.Supported() {
			r.Seccomp, r.Denied = true, len(s.denied())
		} else {
			r.Unavailable = append(r.Unavailable, "seccomp: not supported by this kernel")
		}
	}
	return r
}

// Command returns the path and argv that run argv (its program at path)
// confined by s, and the variable to add to its environment.
func Command(s Spec, path string, argv []string) (string, []string, string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", nil, "", err
	}
	return "/proc/self/exe", append([]string{WrapperName, path}, argv...), specEnv + "=" + string(b), nil
}

// IsWrapper reports whether this process is the confining wrapper.
func IsWrapper() bool { return len(os.Args) > 1 && os.Args[0] == WrapperName }

// Main is the wrapper: it confines itself as its Spec says and execs the
// command. It never returns; a command it cannot confine does not run
// (exit 126).
func Main() {
	runtime.LockOSThread()
	var s Spec
	if err := json.Unmarshal([]byte(os.Getenv(specEnv)), &s); err != nil {
		fail(126, fmt.Errorf("bad confinement spec: %w", err))
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, specEnv+"=") {
			env = append(env, kv)
		}
	}
	if err := Apply(s); err != nil {
		fail(126, err)
	}
	path, argv := os.Args[1], os.Args[2:]
	err := syscall.Exec(path, argv, env)
	code := 126
	if os.IsNotExist(err) {
		code = 127
	}
	fail(code, fmt.Errorf("%s: %w", argv[0], err))
}

func fail(code int, err error) {
	fmt.Fprintf(os.Stderr, "tine: %v\n", err)
	os.Exit(code)
}

// Apply confines the calling process (every thread) as s says, with what
// the kernel supports: no new privileges, Landlock, then seccomp.
func Apply(s Spec) error {
	if err := seccomp.SetNoNewPrivs(); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if len(s.Writable) > 0 {
		if err := restrictWrites(s.Writable); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if s.Seccomp && seccomp.Supported() {
		if err := seccomp.LoadFilter(filter(s.denied())); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	return nil
}

// restrictWrites lets the process read and execute everything and write
// only below writable (directories) or to writable (files); device files
// keep their ioctls, and renames between writable directories work.
func restrictWrites(writable []string) error {
	rules := []landlock.Rule{landlock.RODirs("/").WithIoctlDev()}
	for _, p := range writable {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			continue
		case fi.IsDir():
			rules = append(rules, landlock.RWDirs(p).WithRefer().WithIoctlDev().IgnoreIfMissing())
		default:
			rules = append(rules, landlock.RWFiles(p).WithIoctlDev().IgnoreIfMissing())
		}
	}
	return landlock.V5.BestEffort().RestrictPaths(rules...)
}

func filter(denied []string) seccomp.Filter {
	// Only the calls this architecture has (iopl is x86's, for one).
	var names []string
	if info, err := arch.GetInfo(""); err == nil {
		for _, n := range denied {
			if _, ok := info.SyscallNames[n]; ok {
				names = append(names, n)
			}
		}
	}
	return seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls:      []seccomp.SyscallGroup{{Names: names, Action: seccomp.ActionErrno}},
	}}
}
