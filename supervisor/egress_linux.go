package supervisor

import (
	"encoding/json"
	"fmt"
	"log"
	"net"
	"os"
	"sync"
	"time"

	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/internal/procfs"
)

// refusalPoll is how often the supervisor reads what its rules refused.
const refusalPoll = 500 * time.Millisecond

// startEgress confines the run's network to spec.Egress: the rules go in
// first, then the resolver listens on 127.0.0.1:53 (UDP and TCP), where
// the rules send every DNS query. flush records what was refused since the
// last look; the supervisor calls it when it stops, so a refusal just
// before is kept. The resolver asks upstream from the host's network (hn).
// It must run inside the run's network namespace, with lo up; a run whose
// policy cannot be put in place does not start.
func startEgress(spec Spec, hn *hostNet) (flush func(), res *egress.Resolver, err error) {
	if hn == nil {
		return nil, nil, fmt.Errorf("the resolver's upstream: the launcher passed no host network")
	}
	rules, err := egress.Install(*spec.Egress)
	if err != nil {
		return nil, nil, err
	}
	writePolicy(spec.Dir, *spec.Egress)
	pc, err := net.ListenPacket("udp4", "127.0.0.1:53")
	if err != nil {
		return nil, nil, fmt.Errorf("the run's resolver: %w", err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:53")
	if err != nil {
		pc.Close()
		return nil, nil, fmt.Errorf("the run's resolver over TCP: %w", err)
	}
	path := EgressPath(spec.Dir)
	record := func(r egress.Record) {
		if err := egress.Append(path, r); err != nil {
			log.Printf("egress: recording %+v: %v", r, err)
		}
	}
	res = &egress.Resolver{Policy: *spec.Egress, Dial: hn.Dial, Pin: rules.Pin, Refuse: record}
	go func() {
		if err := res.Serve(pc); err != nil {
			log.Printf("egress: resolver: %v", err)
		}
	}()
	go func() {
		if err := res.ServeTCP(ln); err != nil {
			log.Printf("egress: resolver over TCP: %v", err)
		}
	}()
	w := &refusals{rules: rules, res: res, hn: hn, record: record}
	go w.watch()
	return w.flush, res, nil
}

// writePolicy records the policy in force, for tine ps.
func writePolicy(dir string, p egress.Policy) {
	if b, err := json.Marshal(p); err == nil {
		os.WriteFile(EgressPolicyPath(dir), b, 0o644)
	}
}

// allowEgress adds the host-name rules an exec's agent needs (the API its
// environment points at, Exec.Egress) to the run's policy, and records it.
func (s *server) allowEgress(rules []egress.Rule) {
	if s.resolver != nil && len(rules) > 0 && s.resolver.Allow(rules...) {
		writePolicy(s.spec.Dir, s.resolver.Current())
	}
}

// refusals records what a run's rules refused, each destination once,
// with the allowed name that resolved to it if there is one; and each
// connection to a port of the run's own loopback that nothing of the run
// listens on but the host does, which the run cannot reach unless the port
// is forwarded ([network] host_ports): its refused connection never left
// the run, so no rule saw it.
type refusals struct {
	rules  *egress.Rules
	res    *egress.Resolver
	hn     *hostNet
	record func(egress.Record)
	mu     sync.Mutex
}

func (w *refusals) watch() {
	for range time.Tick(refusalPoll) {
		w.flush()
	}
}

// hostPortNote is what a refused connection to an unforwarded port of the
// host's loopback says.
const hostPortNote = "nothing of the run listens there, the host's loopback does: not forwarded ([network] host_ports)"

func (w *refusals) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	recs, err := w.rules.NewRecords(w.res.NameOf)
	if err != nil {
		log.Printf("egress: reading refusals: %v", err)
		return
	}
	for _, rec := range recs {
		w.record(rec)
	}
	loop, err := w.rules.NewLoopback()
	if err != nil || len(loop) == 0 {
		return
	}
	own, _ := readAll("/proc/self/net/tcp", "/proc/self/net/tcp6")
	host, err := w.hn.Read("/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6")
	if err != nil && len(host) < 2 {
		return
	}
	for _, ap := range loop {
		if !procfs.ListensLoopback(own[0], own[1], ap.Port()) && procfs.ListensLoopback(host[0], host[1], ap.Port()) {
			w.record(egress.Record{Time: time.Now().UTC(), Kind: "connect", Addr: ap.Addr().String(), Port: ap.Port(), Proto: "tcp", Note: hostPortNote})
		}
	}
}

// readAll reads the files at paths (empty where one cannot be read).
func readAll(paths ...string) ([]string, error) {
	out := make([]string, len(paths))
	var rerr error
	for i, p := range paths {
		b, err := os.ReadFile(p)
		out[i] = string(b)
		if err != nil && rerr == nil {
			rerr = err
		}
	}
	return out, rerr
}
