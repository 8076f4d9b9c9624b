package confine

import (
	"encoding/binary"
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
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Probe says what of s this kernel can enforce.
func Probe(s Spec) Applied {
	r := Applied{Writable: s.Writable}
	if len(s.Writable) > 0 || s.Scoped {
		abi, err := llsys.LandlockGetABIVersion()
		switch {
		case err != nil:
			r.Unavailable = append(r.Unavailable, "landlock: "+err.Error())
		case len(s.Writable) > 0:
			r.Landlock = abi
		}
		if err == nil && s.Scoped {
			if r.Scoped = abi >= scopedABI; !r.Scoped {
				r.Unavailable = append(r.Unavailable, fmt.Sprintf("landlock scopes (signals, abstract sockets): ABI %d needed, the kernel has %d", scopedABI, abi))
			}
		}
	}
	if s.Seccomp {
		if seccomp.Supported() {
			r.Seccomp, r.Denied, r.DenyMounts, r.DenySetID = true, len(s.denied()), s.DenyMounts, s.DenySetID
		} else {
			r.Unavailable = append(r.Unavailable, "seccomp: not supported by this kernel")
		}
	}
	if s.DropCaps {
		r.Caps = keptMask()
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

// Apply confines the calling process as s says, with what the kernel
// supports: no new privileges, capabilities (this thread's, the one that
// execs next), Landlock, then seccomp (every thread).
func Apply(s Spec) error {
	if err := seccomp.SetNoNewPrivs(); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if s.DropCaps {
		if err := dropCaps(keptMask()); err != nil {
			return fmt.Errorf("capabilities: %w", err)
		}
	}
	if len(s.Writable) > 0 || s.Scoped {
		if err := restrict(s.Writable, s.Scoped); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if s.Seccomp && seccomp.Supported() {
		if err := seccomp.LoadFilter(filter(s.denied(), s.DenySetID)); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	return nil
}

// scopedABI is the first Landlock ABI with scopes (signals, abstract unix
// sockets).
const scopedABI = 6

// restrict lets the process read and execute everything and, when writable
// is not empty, write only below writable (directories) or to writable
// (files), as ruleset says for this kernel; scoped keeps its signals and
// abstract sockets within its domain where the kernel can.
func restrict(writable []string, scoped bool) error {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return nil // best effort: no Landlock in this kernel
	}
	var cfg landlock.Config
	var rules []landlock.Rule
	if rs := ruleset(abi, writable); rs != nil && len(writable) > 0 {
		cfg.HandledAccessFS = landlock.AccessFSSet(rs.Handled)
		rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(rs.Root), "/"))
		for _, p := range writable {
			fi, err := os.Stat(p)
			if err != nil {
				continue
			}
			rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(rs.Access(fi.IsDir())), p))
		}
	}
	if scoped && abi >= scopedABI {
		cfg.Scoped = landlock.ScopedSet(llsys.ScopeAbstractUnixSocket | llsys.ScopeSignal)
	}
	if cfg.HandledAccessFS == 0 && cfg.Scoped == 0 {
		return nil
	}
	return cfg.Restrict(rules...)
}

// ruleset is the one definition of the Landlock rules (what Apply and a
// Plan enforce) on a kernel of Landlock ABI abi, best effort up to ABI 5
// (as go-landlock's V5.BestEffort): "/" may be read and executed, and its
// devices' ioctls used; a writable directory may be read and written below
// and files renamed or linked between writable directories (refer); a
// writable file read and written. nil: nothing is restricted, below ABI 2
// (which cannot grant refer: go-landlock then restricts nothing either).
func ruleset(abi int, writable []string) *Ruleset {
	supported := map[int]uint64{2: 1<<14 - 1, 3: 1<<15 - 1, 4: 1<<15 - 1, 5: 1<<16 - 1}
	h, ok := supported[min(abi, 5)]
	if !ok {
		return nil
	}
	const (
		read  = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir
		write = llsys.AccessFSWriteFile | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile | llsys.AccessFSMakeChar |
			llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo |
			llsys.AccessFSMakeBlock | llsys.AccessFSMakeSym | llsys.AccessFSTruncate
		file = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSTruncate | llsys.AccessFSReadFile
		dev  = llsys.AccessFSIoctlDev
	)
	return &Ruleset{Handled: h, Root: (read | dev) & h, Dir: (read | write | llsys.AccessFSRefer | dev) & h,
		File: ((read|write)&file | dev) & h, Writable: writable}
}

// Access is what r allows beneath a writable directory (dir) or on a
// writable file.
func (r *Ruleset) Access(dir bool) uint64 {
	if dir {
		return r.Dir
	}
	return r.File
}

// PlanFor is s as data for a process confined from outside, with what
// this kernel supports (as Apply would).
func PlanFor(s Spec) (Plan, error) {
	p := Plan{Applied: Probe(s), LastCap: lastCap()}
	p.Caps = p.Applied.Caps
	if p.Applied.Landlock > 0 {
		p.Landlock = ruleset(p.Applied.Landlock, s.Writable)
	}
	if p.Applied.Seccomp {
		f := filter(s.denied(), s.DenySetID)
		insts, err := f.Policy.Assemble()
		if err != nil {
			return Plan{}, fmt.Errorf("seccomp: %w", err)
		}
		raw, err := bpf.Assemble(insts)
		if err != nil {
			return Plan{}, fmt.Errorf("seccomp: %w", err)
		}
		for _, in := range raw { // struct sock_filter: u16 code, u8 jt, u8 jf, u32 k
			p.Filter = binary.NativeEndian.AppendUint16(p.Filter, in.Op)
			p.Filter = append(p.Filter, in.Jt, in.Jf)
			p.Filter = binary.NativeEndian.AppendUint32(p.Filter, in.K)
		}
	}
	return p, nil
}

func filter(denied []string, setID bool) seccomp.Filter {
	// Only the calls this architecture has (iopl is x86's, for one).
	info, err := arch.GetInfo("")
	has := func(n string) bool { _, ok := info.SyscallNames[n]; return err == nil && ok }
	var names []string
	for _, n := range denied {
		if has(n) {
			names = append(names, n)
		}
	}
	groups := []seccomp.SyscallGroup{{Names: names, Action: seccomp.ActionErrno}}
	if setID {
		var withArgs []seccomp.NameWithConditions
		for _, c := range setIDCalls {
			if !has(c.name) {
				continue
			}
			for _, bit := range []uint64{unix.S_ISUID, unix.S_ISGID} {
				conds := seccomp.ArgumentConditions{{Argument: c.mode, Operation: seccomp.BitsSet, Value: bit}}
				if c.flags >= 0 { // only when it creates the file
					conds = append(conds, seccomp.Condition{Argument: uint32(c.flags), Operation: seccomp.BitsSet, Value: unix.O_CREAT})
				}
				withArgs = append(withArgs, seccomp.NameWithConditions{Name: c.name, Conditions: conds})
			}
		}
		groups = append(groups, seccomp.SyscallGroup{NamesWithCondtions: withArgs, Action: seccomp.ActionErrno})
		if has("openat2") { // its mode is behind a pointer: refused as unknown, so callers fall back to openat
			groups = append(groups, seccomp.SyscallGroup{Names: []string{"openat2"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)})
		}
	}
	return seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: seccomp.Policy{
		DefaultAction: seccomp.ActionAllow, Syscalls: groups}}
}

// setIDCalls are the calls that set a file's mode, with the position of
// their mode argument and of their open flags (-1: none, the call always
// sets the mode).
var setIDCalls = []struct {
	name  string
	mode  uint32
	flags int
}{
	{"chmod", 1, -1}, {"fchmod", 1, -1}, {"fchmodat", 2, -1}, {"fchmodat2", 2, -1},
	{"open", 2, 1}, {"openat", 3, 2}, {"creat", 1, -1}, {"mknod", 1, -1}, {"mknodat", 2, -1},
}
