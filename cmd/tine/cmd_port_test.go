package main

import "testing"

func TestPort_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"port"}, exitUsage, "port needs RUN and at most one PORT"},
		{[]string{"port", "r", "1", "2"}, exitUsage, "port needs RUN and at most one PORT"},
	})
}
