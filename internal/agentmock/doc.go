// Package agentmock holds loopback mock servers of the model APIs that
// the real agent CLIs talk to (an OpenAI Responses API for Codex, an
// Anthropic Messages API for Claude Code), scripted per test, so that
// tests can drive the real binaries without a network or a key.
package agentmock
