package runtime

import (
	"context"
	"fmt"
	"sync"

	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/livefork"
)

// choose decides how each candidate reaches the forks of a live fork in
// mode (ptrace, criu or auto), setting its Engine and Why, or Refused:
// the service's [[service]] live decides, "auto" leaving it to mode
// (--live ptrace or criu) or, in mode auto, to the process: a
// single-threaded process ptrace can fork goes by ptrace (the cheapest:
// no copy of its memory), any other tree (threads, children) by CRIU, and
// what neither can carry is restarted. A tine exec process goes by ptrace
// alone, and is left out with --live criu.
func (m *Manager) choose(ctx context.Context, p engine.Ref, cands []candidate, mode string) []candidate {
	settings := map[string]string{}
	if cfg, err := m.eng.Config(ctx, p); err == nil {
		for _, s := range cfg.Services {
			settings[s.Name] = s.Live
		}
	}
	ch := chooser{mode: mode, setnsWhy: m.deniesSetns(p), criu: sync.OnceValue(func() error { return livefork.CRIUProbe(ctx) })}
	var out []candidate
	for _, c := range cands {
		if c.Service == "" && mode == engine.LiveCRIU {
			continue
		}
		out = append(out, ch.choose(c, settings[c.Service]))
	}
	return out
}

// chooser holds what choose knows of the parent: the mode asked for, why
// ptrace cannot fork its processes at all ("" if it can), and whether
// criu works here (probed once, when first needed).
type chooser struct {
	mode     string
	setnsWhy string
	criu     func() error
}

// criuFor reports why criu cannot checkpoint pid here, or nil.
func (ch chooser) criuFor(pid int) error {
	if err := ch.criu(); err != nil {
		return err
	}
	return livefork.CRIUDumps(pid)
}

// choose decides for one candidate whose service says live = setting.
func (ch chooser) choose(c candidate, setting string) candidate {
	if c.Pid == 0 {
		c.Refused = "not running"
		return c
	}
	ptraceWhy := c.Refused // livefork.Check's refusal
	if ch.setnsWhy != "" {
		ptraceWhy = ch.setnsWhy
	}
	c.Refused = ""
	want, why := setting, fmt.Sprintf("live = %q in tine.toml", setting)
	if c.Service == "" {
		want, why = config.LivePtrace, "a tine exec process"
	}
	if want == "" || want == config.LiveAuto {
		want, why = ch.mode, "--live "+ch.mode
	}
	switch want {
	case config.LiveRestart:
		c.Refused = why
	case engine.LivePtrace:
		c.Engine, c.Why, c.Refused = engine.LivePtrace, why, ptraceWhy
	case engine.LiveCRIU:
		c.Engine, c.Why = engine.LiveCRIU, why
		if err := ch.criuFor(c.Pid); err != nil {
			c.Refused = err.Error()
		}
	default: // auto
		if ptraceWhy == "" {
			c.Engine, c.Why = engine.LivePtrace, "a single-threaded process"
		} else if err := ch.criuFor(c.Pid); err != nil {
			c.Refused = fmt.Sprintf("ptrace cannot fork it (%s) and %v", ptraceWhy, err)
		} else {
			c.Engine, c.Why = engine.LiveCRIU, ptraceWhy
		}
	}
	return c
}
