package config

import (
	"strings"
	"testing"
)

func TestParse_Prices(t *testing.T) {
	c, err := Parse(`[prices.claude-opus-5-5]
input = 4
output = 20.5
cache_read = 0.4

[prices.my-model]
input = 1

[prices.bad]
input = -1
output = 2
`)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Prices["claude-opus-5-5"]; p != (Price{Input: 4, Output: 20.5, CacheRead: 0.4}) {
		t.Errorf("claude-opus-5-5 = %+v", p)
	}
	for _, m := range []string{"my-model", "bad"} {
		if _, ok := c.Prices[m]; ok {
			t.Errorf("%s: an incomplete or invalid price was kept", m)
		}
	}
	var ws []string
	for _, w := range c.Warnings {
		ws = append(ws, w.Msg)
	}
	if all := strings.Join(ws, "\n"); !strings.Contains(all, "my-model") || !strings.Contains(all, "bad") {
		t.Errorf("warnings %q: want one for my-model and one for bad", ws)
	}
}
