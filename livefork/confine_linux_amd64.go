package livefork

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tinehq/tine/confine"
	"golang.org/x/sys/unix"
)

// landlockRuleset is the smallest struct landlock_ruleset_attr the kernel
// takes: handled_access_fs alone.
const landlockRuleset = 8

// confine gives the child the fork's confinement, as confine.Apply would
// give a process started in the fork: no_new_privs, Landlock (the paths
// opened by the child, in the fork's mount namespace), then the seccomp
// filter, which stacks on the origin's. It runs last, once the child needs
// no call the fork's filter denies (setns) and has opened its logs.
func (in *injector) confine(p *confine.Plan) error {
	if p == nil || (p.Landlock == nil && p.Filter == nil && p.Caps == 0) {
		return nil
	}
	if _, err := in.call("prctl(PR_SET_NO_NEW_PRIVS)", unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	if p.Caps != 0 {
		if err := in.dropCaps(p.Caps, p.LastCap); err != nil {
			return fmt.Errorf("capabilities: %w", err)
		}
	}
	if p.Landlock != nil {
		if err := in.landlock(p.Landlock); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if p.Filter != nil {
		if err := in.seccomp(p.Filter); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	return nil
}

// landlock creates the ruleset in the child, adds "/" and each writable
// path the child finds, and restricts the child by it.
func (in *injector) landlock(rs *confine.Ruleset) error {
	attr := in.scratch + intOffset
	if err := in.t.poke(attr, binary.LittleEndian.AppendUint64(nil, rs.Handled)); err != nil {
		return err
	}
	fd, err := in.call("landlock_create_ruleset", unix.SYS_LANDLOCK_CREATE_RULESET, attr, landlockRuleset, 0)
	if err != nil {
		return err
	}
	if err := in.landlockPath(fd, "/", func(bool) uint64 { return rs.Root }, false); err != nil {
		return err
	}
	for _, p := range rs.Writable {
		if err := in.landlockPath(fd, p, rs.Access, true); err != nil {
			return err
		}
	}
	if _, err := in.call("landlock_restrict_self", unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0); err != nil {
		return err
	}
	return in.close(fd)
}

// landlockPath opens path O_PATH in the child and adds the rule access
// gives it (as a directory or not, as the child's descriptor says); a
// missing path is skipped when optional.
func (in *injector) landlockPath(ruleset uint64, path string, access func(dir bool) uint64, optional bool) error {
	fd, err := in.open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if optional && errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	fi, err := os.Stat(procPath(in.t.pid, "fd", strconv.FormatUint(fd, 10)))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// struct landlock_path_beneath_attr, packed: u64 allowed_access, s32 parent_fd.
	attr := binary.LittleEndian.AppendUint64(nil, access(fi.IsDir()))
	attr = binary.LittleEndian.AppendUint32(attr, uint32(fd))
	if err := in.t.poke(in.scratch+intOffset, attr); err != nil {
		return err
	}
	if _, err := in.call("landlock_add_rule "+path, unix.SYS_LANDLOCK_ADD_RULE, ruleset, unix.LANDLOCK_RULE_PATH_BENEATH,
		in.scratch+intOffset, 0); err != nil {
		return err
	}
	return in.close(fd)
}

// seccomp loads the filter program into the child (this thread alone: the
// child has no other).
func (in *injector) seccomp(prog []byte) error {
	if len(prog) == 0 || len(prog)%8 != 0 || len(prog) > intOffset {
		return fmt.Errorf("filter of %d bytes does not fit the scratch page", len(prog))
	}
	if err := in.t.poke(in.scratch, prog); err != nil {
		return err
	}
	// struct sock_fprog: u16 len, 6 bytes of padding, the program's address.
	fprog := binary.LittleEndian.AppendUint16(nil, uint16(len(prog)/8))
	fprog = binary.LittleEndian.AppendUint64(append(fprog, 0, 0, 0, 0, 0, 0), in.scratch)
	if err := in.t.poke(in.scratch+intOffset, fprog); err != nil {
		return err
	}
	_, err := in.call("seccomp(SECCOMP_SET_MODE_FILTER)", unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, in.scratch+intOffset)
	return err
}

// dropCaps holds the child to the capabilities in keep, as confine's
// DropCaps does a process of the fork: out of the bounding set when the
// child may drop them (CAP_SETPCAP), out of its permitted, effective and
// inheritable sets, the ambient set cleared.
func (in *injector) dropCaps(keep uint64, last int) error {
	sets, err := capSets(in.t.pid)
	if err != nil {
		return err
	}
	if sets["CapEff"]&(1<<unix.CAP_SETPCAP) != 0 {
		for c := 0; c <= last; c++ {
			if keep&(1<<c) == 0 {
				if _, err := in.call("prctl(PR_CAPBSET_DROP)", unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uint64(c), 0, 0, 0); err != nil {
					return err
				}
			}
		}
	}
	// struct __user_cap_header_struct {u32 version; int pid}, then two
	// struct __user_cap_data_struct {u32 effective, permitted, inheritable}.
	b := binary.LittleEndian.AppendUint32(nil, unix.LINUX_CAPABILITY_VERSION_3)
	b = binary.LittleEndian.AppendUint32(b, 0)
	for i := range 2 {
		k := uint32(keep >> (32 * i))
		for _, set := range []string{"CapEff", "CapPrm", "CapInh"} {
			b = binary.LittleEndian.AppendUint32(b, uint32(sets[set]>>(32*i))&k)
		}
	}
	if err := in.t.poke(in.scratch+intOffset, b); err != nil {
		return err
	}
	if _, err := in.call("capset", unix.SYS_CAPSET, in.scratch+intOffset, in.scratch+intOffset+8); err != nil {
		return err
	}
	_, err = in.call("prctl(PR_CAP_AMBIENT_CLEAR_ALL)", unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	return err
}

// capSets reads the capability sets of process pid (CapEff, CapPrm,
// CapInh, ...) from its status.
func capSets(pid int) (map[string]uint64, error) {
	b, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.HasPrefix(k, "Cap") {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out, nil
}
