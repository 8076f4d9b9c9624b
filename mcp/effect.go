package mcp

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tinehq/tine/effect"
)

// EffectInput is the input of effect: what tine effect takes as arguments.
type EffectInput struct {
	Run     string   `json:"run,omitempty" jsonschema:"the run asking (id, WORKSPACE/NAME or name); default: the run this server runs in"`
	Kind    string   `json:"kind" jsonschema:"git-push, http or run"`
	Remote  string   `json:"remote,omitempty" jsonschema:"git-push: the remote (default origin)"`
	Refspec string   `json:"refspec,omitempty" jsonschema:"git-push: what to push (default the current branch)"`
	Method  string   `json:"method,omitempty" jsonschema:"http: the method"`
	URL     string   `json:"url,omitempty" jsonschema:"http: the URL"`
	Body    string   `json:"body,omitempty" jsonschema:"http: the request body"`
	Args    []string `json:"args,omitempty" jsonschema:"run: the command and its arguments; its first word must be declared in tine.toml's [effects] commands"`
	Key     string   `json:"key,omitempty" jsonschema:"idempotency key: the same key is never done twice (default: the request's digest)"`
}

const effectDesc = `Ask a person for an external effect (a git push, an HTTP request, a declared command): tine resolves exactly what would be sent, records it as a pending approval, and does it outside the run, once, after a person approves with "tine approve ID"; the receipt is in tine log. ` +
	`Use this instead of running git push, deploys or requests yourself (tine's hooks refuse those), and from a sandbox that blocks tine's socket (codex's), where the tine effect command cannot reach the daemon. Asked again with the same key, nothing is repeated. Forks may not ask: their work leaves through a merge.`

func effectSchema() *jsonschema.Schema {
	return schemaFor[EffectInput](func(p map[string]*jsonschema.Schema) {
		p["kind"].Enum = []any{effect.GitPush, effect.HTTP, effect.Run}
	})
}

func (t *tools) addEffectTools(s *sdk.Server) {
	add(s, &sdk.Tool{Name: "effect", Description: effectDesc, InputSchema: effectSchema(),
		Annotations: &sdk.ToolAnnotations{Title: "Ask for an external effect", DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}}, t.effect)
}

func (t *tools) effect(ctx context.Context, in EffectInput) (*answer, error) {
	run, err := t.runOrSelf(in.Run)
	if err != nil {
		return nil, err
	}
	req := effect.Request{Kind: in.Kind, Key: in.Key, Remote: in.Remote, Refspec: in.Refspec,
		Method: in.Method, URL: in.URL, Body: in.Body, Args: in.Args}
	out, err := t.api.Effect(ctx, run, req)
	if err != nil {
		return nil, unreachable(err)
	}
	return &answer{Note: out.Summary(), Data: out}, nil
}
