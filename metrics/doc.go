// Package metrics exports what tine does and holds as Prometheus metrics,
// in a registry of its own: it observes the engine's operations (it is an
// engine.Observer), reads the engine's state at each scrape, and reads the
// fork-runs that ended from the event log and the reports they left.
//
// Wiring, in the daemon:
//
//	m := metrics.New(metrics.WithSource(metrics.EngineSource(e)), metrics.WithForkRuns(e))
//	e.SetObserver(m)
//	mux.Handle("GET /metrics", m.Handler())
//
// Every name starts with tine_ and ends with its unit; no label ever holds
// a run's id or name. The only open-ended label is workspace, one value per
// workspace of the state directory.
package metrics
