package httpapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/tinehq/tine/errcode"
	"github.com/tinehq/tine/httpapi"
)

// Every kind of errcode's table crosses the socket both ways: an answer's
// code turns back into its sentinel, with the daemon's message as is.
func TestAnswerError_EveryKindBothWays(t *testing.T) {
	for _, k := range errcode.Kinds() {
		msg := fmt.Sprintf("run app/source-2: %v", k.Err)
		b, _ := json.Marshal(httpapi.Error{Error: msg, Code: k.Code})
		err := httpapi.AnswerError(fmt.Sprint(k.Status), b)
		if !errors.Is(err, k.Err) || err.Error() != msg || errcode.Of(err) != k {
			t.Errorf("answer %s: %v (kind %+v), want %q wrapping %v", k.Code, err, errcode.Of(err), msg, k.Err)
		}
	}
	b, _ := json.Marshal(httpapi.Error{Error: "disk on fire", Code: "error"})
	if err := httpapi.AnswerError("500", b); err.Error() != "disk on fire" || errcode.Of(err) != errcode.Unknown {
		t.Errorf("answer error: %v, want the message and no sentinel", err)
	}
	if err := httpapi.AnswerError("502 Bad Gateway", []byte("<html>")); err.Error() != "the tine daemon answered 502 Bad Gateway" {
		t.Errorf("answer not JSON: %v", err)
	}
}
