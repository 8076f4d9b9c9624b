package livefork

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// UnixLinks lists, for each tree rooted at roots[i] (host pids), its
// connected stream unix sockets whose peers are outside that tree, as
// sock_diag reports them in the network namespace of process ns (a
// socket's peer is known only there). A peer in another of the trees is
// a connection between them; any other is a client or server beyond.
func UnixLinks(ns int, roots []int) ([][]UnixLink, error) {
	h, err := vnetns.GetFromPid(ns)
	if err != nil {
		return nil, fmt.Errorf("the network namespace of process %d: %w", ns, err)
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h, unix.NETLINK_INET_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sock_diag in the network namespace of process %d: %w", ns, err)
	}
	defer nl.Close()
	diag, err := nl.UnixSocketDiagInfo()
	if err != nil {
		return nil, fmt.Errorf("sock_diag in the network namespace of process %d: %w", ns, err)
	}
	peers := map[uint64]uint64{}
	for _, d := range diag {
		if d.DiagMsg.Type == syscall.SOCK_STREAM && d.Peer != nil && *d.Peer != 0 {
			peers[uint64(d.DiagMsg.INode)] = uint64(*d.Peer)
		}
	}
	out := make([][]UnixLink, len(roots))
	for i, root := range roots {
		own := treeSockets(root)
		for ino := range own {
			if peer, ok := peers[ino]; ok && !own[peer] {
				out[i] = append(out[i], UnixLink{Ino: ino, Peer: peer})
			}
		}
	}
	return out, nil
}

// treeSockets are the inodes of the sockets the tree of root holds open.
func treeSockets(root int) map[uint64]bool {
	out := map[uint64]bool{}
	for _, pid := range treePids(root) {
		fds, _ := os.ReadDir(procPath(pid, "fd"))
		for _, e := range fds {
			l, _ := os.Readlink(procPath(pid, "fd", e.Name()))
			if v, ok := strings.CutPrefix(l, "socket:["); ok {
				if ino, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 64); err == nil {
					out[ino] = true
				}
			}
		}
	}
	return out
}
