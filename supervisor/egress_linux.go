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
	go watchRefusals(rules, res, record)
	return func() { recordRefusals(rules, res, record) }, res, nil
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

// watchRefusals records each destination the rules refused, once, with
// the allowed name that resolved to it if there is one.
func watchRefusals(rules *egress.Rules, res *egress.Resolver, record func(egress.Record)) {
	for range time.Tick(refusalPoll) {
		recordRefusals(rules, res, record)
	}
}

var refusalsMu sync.Mutex

func recordRefusals(rules *egress.Rules, res *egress.Resolver, record func(egress.Record)) {
	refusalsMu.Lock()
	defer refusalsMu.Unlock()
	got, err := rules.NewRefusals()
	if err != nil {
		log.Printf("egress: reading refusals: %v", err)
		return
	}
	for _, r := range got {
		record(egress.Record{Time: time.Now().UTC(), Kind: "connect", Host: res.NameOf(r.Addr),
			Addr: r.Addr.String(), Port: r.Port, Proto: r.Proto})
	}
}
