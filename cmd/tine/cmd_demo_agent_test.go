package main

import "testing"

func TestDemoAgent_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"demo-agent", "x"}, exitUsage, "demo-agent takes 0 argument(s), got 1"},
	})
}
