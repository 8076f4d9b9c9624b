package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/tinehq/tine/internal/lazyre"
)

// costKey is the key of a command agent's cost line.
const costKey = "tine_cost_usd"

// commandParser reads a command agent's stdout: every line is output,
// except {"tine_cost_usd": X} lines, each a charge of X dollars added to
// the running cost.
type commandParser struct{ n int }

// costLineRE matches a cost line whose value is not valid JSON (NaN, Inf).
var costLineRE = lazyre.New(`^\{\s*"tine_cost_usd"\s*:\s*([^\s{}]+)\s*\}$`)

// Feed parses one line.
func (p *commandParser) Feed(line []byte) ([]Event, error) {
	p.n++
	line = bytes.TrimRight(line, "\r\n")
	cost, isCost, err := parseCostLine(bytes.TrimSpace(line))
	if err != nil {
		return nil, parseError(p.n, line, err)
	}
	if isCost {
		return []Event{{Kind: EventCost, CostUSD: SafeCost(cost)}}, nil
	}
	if len(line) == 0 {
		return nil, nil
	}
	return []Event{{Kind: EventText, Text: string(line)}}, nil
}

// parseCostLine reports whether line is a cost line and its value.
func parseCostLine(line []byte) (float64, bool, error) {
	if len(line) == 0 || line[0] != '{' || !bytes.Contains(line, []byte(costKey)) {
		return 0, false, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		m := costLineRE().FindSubmatch(line)
		if m == nil {
			return 0, false, nil // some other output that mentions the key
		}
		return parseCost(m[1])
	}
	raw, ok := obj[costKey]
	if !ok {
		return 0, false, nil
	}
	return parseCost(raw)
}

func parseCost(raw []byte) (float64, bool, error) {
	x, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, false, errors.New(costKey + " is not a number: " + string(raw))
	}
	return x, true, nil
}
