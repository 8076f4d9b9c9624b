package judge

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tinehq/tine"
)

// Defaults of an LLM judge.
const (
	DefaultMaxDiffBytes     = 16 << 10
	DefaultTimeout          = 120 * time.Second
	DefaultMaxTokens        = 1024
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
)

// Limits on what is read back from the model's API.
const (
	maxResponseBytes = 4 << 20
	maxErrorSnippet  = 512
)

// Providers an LLM judge can talk to.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// anthropicVersion is the Messages API version the judge speaks.
const anthropicVersion = "2023-06-01"

// LLM is a Judge that asks a language model to pick the winner, through an
// OpenAI-compatible Chat Completions API or an Anthropic-compatible Messages
// API. Its verdicts have Judge "llm"; their confidence is the model's own.
// The zero values of the optional fields select the defaults above.
type LLM struct {
	// Provider is ProviderOpenAI or ProviderAnthropic; nothing else, and
	// nothing is assumed when it is empty.
	Provider string
	// BaseURL is the API root. For OpenAI it includes the version, as
	// OPENAI_BASE_URL does ("https://api.openai.com/v1"), and
	// "/chat/completions" is appended. For Anthropic it does not, as
	// ANTHROPIC_BASE_URL does not ("https://api.anthropic.com"), and
	// "/v1/messages" is appended; a BaseURL that already ends in "/v1"
	// gets only "/messages".
	BaseURL string
	// Model and APIKey are required.
	Model  string
	APIKey string
	// Client makes the requests; http.DefaultClient when nil.
	Client *http.Client
	// MaxDiffBytes bounds each candidate's diff in the prompt.
	MaxDiffBytes int
	// Timeout bounds the whole request, reading the answer included.
	Timeout time.Duration
	// MaxTokens bounds the answer (Anthropic's required max_tokens).
	MaxTokens int
}

var _ Judge = LLM{}

// chatMessage is one message of either API.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type openAIRequest struct {
	Model          string        `json:"model"`
	Messages       []chatMessage `json:"messages"`
	Temperature    float64       `json:"temperature"`
	ResponseFormat struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

type openAIResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal string  `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

type anthropicRequest struct {
	Model       string        `json:"model"`
	MaxTokens   int           `json:"max_tokens"`
	System      string        `json:"system"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
}

type anthropicResponse struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
}

// Judge asks the model once. It returns an error wrapping tine.ErrInvalid
// for a missing API key, model or provider, before any request; an error
// wrapping ErrBadAnswer for an HTTP error status or an unusable answer;
// and the transport's or ctx's error when the request fails. Errors never
// include the API key.
func (l LLM) Judge(ctx context.Context, task string, cands []Candidate) (*Verdict, error) {
	if err := checkCandidates(cands); err != nil {
		return nil, err
	}
	endpoint, err := l.endpoint()
	if err != nil {
		return nil, err
	}
	p, err := newPrompt(task, cands, l.maxDiff())
	if err != nil {
		return nil, err
	}
	text, err := l.ask(ctx, endpoint, p)
	if err != nil {
		return nil, l.redact(err)
	}
	a, err := parseAnswer(text, p.labels)
	if err != nil {
		return nil, l.redact(fmt.Errorf("judge: llm %s: %w", l.Provider, err))
	}
	return p.verdict(a), nil
}

// endpoint checks the configuration and returns the URL to post to.
func (l LLM) endpoint() (string, error) {
	var base, path string
	switch l.Provider {
	case ProviderOpenAI:
		base, path = cmp.Or(l.BaseURL, DefaultOpenAIBaseURL), "/chat/completions"
	case ProviderAnthropic:
		base, path = cmp.Or(l.BaseURL, DefaultAnthropicBaseURL), "/v1/messages"
	default:
		return "", fmt.Errorf("judge: llm: provider %q: %w (want %s or %s)", l.Provider, tine.ErrInvalid, ProviderOpenAI, ProviderAnthropic)
	}
	switch {
	case strings.TrimSpace(l.APIKey) == "":
		return "", fmt.Errorf("judge: llm %s: no API key configured: %w", l.Provider, tine.ErrInvalid)
	case strings.TrimSpace(l.Model) == "":
		return "", fmt.Errorf("judge: llm %s: no model configured: %w", l.Provider, tine.ErrInvalid)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("judge: llm %s: base URL %q is not an http(s) URL: %w", l.Provider, l.redactString(base), tine.ErrInvalid)
	}
	base = strings.TrimRight(base, "/")
	if l.Provider == ProviderAnthropic && strings.HasSuffix(base, "/v1") {
		path = "/messages"
	}
	return base + path, nil
}

// ask posts the prompt and returns the text of the model's answer.
func (l LLM) ask(ctx context.Context, endpoint string, p *prompt) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout())
	defer cancel()
	body, err := l.body(p)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("judge: llm %s: %w", l.Provider, err)
	}
	l.header(req.Header)
	resp, err := l.client().Do(req)
	if err != nil {
		return "", fmt.Errorf("judge: llm %s: %w", l.Provider, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("judge: llm %s: read answer: %w", l.Provider, err)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return "", fmt.Errorf("judge: llm %s: HTTP %d %s: %s: %w", l.Provider, resp.StatusCode,
			http.StatusText(resp.StatusCode), snippet(string(data), maxErrorSnippet), ErrBadAnswer)
	case len(data) > maxResponseBytes:
		return "", fmt.Errorf("judge: llm %s: answer larger than %d bytes: %w", l.Provider, maxResponseBytes, ErrBadAnswer)
	}
	text, err := l.text(data)
	if err != nil {
		return "", fmt.Errorf("judge: llm %s: %w", l.Provider, err)
	}
	return text, nil
}

// body encodes the request for the provider.
func (l LLM) body(p *prompt) ([]byte, error) {
	var v any
	if l.Provider == ProviderAnthropic {
		v = anthropicRequest{Model: l.Model, MaxTokens: l.maxTokens(), System: p.system,
			Messages: []chatMessage{{Role: "user", Content: p.user}}}
	} else {
		r := openAIRequest{Model: l.Model, Messages: []chatMessage{{Role: "system", Content: p.system}, {Role: "user", Content: p.user}}}
		r.ResponseFormat.Type = "json_object"
		v = r
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("judge: llm %s: encode request: %w", l.Provider, err)
	}
	return data, nil
}

func (l LLM) header(h http.Header) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	if l.Provider == ProviderAnthropic {
		h.Set("x-api-key", l.APIKey)
		h.Set("anthropic-version", anthropicVersion)
		return
	}
	h.Set("Authorization", "Bearer "+l.APIKey)
}

// text extracts the answer's text from the provider's response.
func (l LLM) text(data []byte) (string, error) {
	if l.Provider == ProviderAnthropic {
		var r anthropicResponse
		if err := json.Unmarshal(data, &r); err != nil {
			return "", badAnswer("response is not JSON: %v", err)
		}
		var b strings.Builder
		for _, c := range r.Content {
			if c.Type == "text" {
				b.WriteString(c.Text)
			}
		}
		if b.Len() == 0 {
			return "", badAnswer("response has no text (stop_reason %q)", snippet(r.StopReason, 40))
		}
		return b.String(), nil
	}
	var r openAIResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return "", badAnswer("response is not JSON: %v", err)
	}
	if len(r.Choices) == 0 {
		return "", badAnswer("response has no choices")
	}
	m := r.Choices[0]
	if m.Message.Content == nil || *m.Message.Content == "" {
		return "", badAnswer("response has no content (finish_reason %q, refusal %q)",
			snippet(m.FinishReason, 40), snippet(m.Message.Refusal, 200))
	}
	return *m.Message.Content, nil
}

func (l LLM) client() *http.Client {
	if l.Client != nil {
		return l.Client
	}
	return http.DefaultClient
}

func (l LLM) maxDiff() int {
	if l.MaxDiffBytes > 0 {
		return l.MaxDiffBytes
	}
	return DefaultMaxDiffBytes
}

func (l LLM) timeout() time.Duration {
	if l.Timeout > 0 {
		return l.Timeout
	}
	return DefaultTimeout
}

func (l LLM) maxTokens() int {
	if l.MaxTokens > 0 {
		return l.MaxTokens
	}
	return DefaultMaxTokens
}

// redact returns err, with the API key replaced wherever its message
// would show it (a server echoing it, a base URL carrying it).
func (l LLM) redact(err error) error {
	if l.APIKey == "" || !strings.Contains(err.Error(), l.APIKey) {
		return err
	}
	return &redacted{msg: l.redactString(err.Error()), err: err}
}

func (l LLM) redactString(s string) string {
	if l.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, l.APIKey, "[redacted]")
}

// redacted is an error whose message hides the API key; it unwraps to the
// original so errors.Is still finds ErrBadAnswer or a context error.
type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }
