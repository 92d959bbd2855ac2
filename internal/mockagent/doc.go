// Package mockagent is a scripted Agent Client Protocol agent.
//
// kandev ships it inside its own binary (the hidden `kandev mock-agent`
// subcommand, used by the built-in profile "mock") so that tests and demos
// can drive the whole coordinator without a real model. It is a real ACP
// agent, built on acp-go-sdk, and a real MCP client of the "kandev" MCP
// server it is handed in session/new; what it does in a turn is spelled out
// by `mock:` directive lines in the prompt. docs/mock-agent.md describes the
// directive language.
package mockagent
