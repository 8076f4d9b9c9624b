package sqltx

import (
	"encoding/json"
	"fmt"

	"github.com/tinehq/tine"
)

const eventCols = "seq, time, workspace, run, kind, detail"

// scanEvent reads a row of eventCols.
func scanEvent(s Row) (*tine.Event, error) {
	var e tine.Event
	var ts int64
	var detail []byte
	if err := s.Scan(&e.Seq, &ts, &e.Workspace, &e.Run, &e.Kind, &detail); err != nil {
		return nil, err
	}
	e.Time = fromUnixNano(ts)
	if detail != nil {
		e.Detail = json.RawMessage(detail)
	}
	return &e, nil
}

// AppendEvent adds e to the log, setting its Seq and, if zero, its Time,
// with the dialect's AppendEvent statement (PostgreSQL's also notifies
// the store's followers). A Detail that is not valid JSON wraps
// tine.ErrInvalid.
func (t *Tx) AppendEvent(e *tine.Event) error {
	var detail any // NULL when empty
	if len(e.Detail) > 0 {
		if !json.Valid(e.Detail) {
			return fmt.Errorf("append event %q: detail is not JSON: %w", e.Kind, tine.ErrInvalid)
		}
		detail = string(e.Detail)
	}
	t.stamp(&e.Time)
	args := append([]any{unixNano(e.Time), e.Workspace, e.Run, string(e.Kind), detail}, t.d.EventArgs...)
	if err := t.db.QueryRow(t.ctx, t.d.AppendEvent, args...).Scan(&e.Seq); err != nil {
		return fmt.Errorf("append event %q: %w", e.Kind, err)
	}
	return nil
}

// Events lists the events that match f in sequence order.
func (t *Tx) Events(f tine.EventFilter) ([]*tine.Event, error) {
	var w filter
	w.add("seq > ?", f.After)
	w.eq("workspace", f.Workspace)
	w.eq("run", f.Run)
	q := "SELECT " + eventCols + " FROM events" + w.String() + " ORDER BY seq"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	return list(t, scanEvent, "events", q, w.args...)
}
