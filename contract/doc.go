// Package contract is the MCP-facing result contract of oa: what a calling
// agent sees and codes against. It names the coordinator's own tools and
// their arguments, the rule every served tool name follows and the name a
// capability is served under, the four terminal outcomes (and running), the
// closed reasons of a run result with their fixed copy, and the closed
// record_changed and proof values.
//
// It is one leaf, importing only the standard library, so that the three
// packages that must agree on it read it from one place: ir (the compiler
// refuses a capability whose tool name would take a coordinator tool's),
// harness (tools.json and the SKILL.md text) and coordinator (the served
// tools, their schemas, whose enums are built from these tables, and every
// result it returns). Changing a name or a reason here changes what every
// calling agent sees.
package contract
