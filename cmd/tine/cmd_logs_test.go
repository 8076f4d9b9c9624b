package main

import "testing"

func TestLogs_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"logs"}, exitUsage, "logs needs RUN and at most one SERVICE"},
		{[]string{"logs", "r", "s", "t"}, exitUsage, "logs needs RUN and at most one SERVICE"},
	})
}
