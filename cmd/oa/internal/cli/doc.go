// Package cli is what oa's command groups share: the usage error and exit
// status, JSON and refusal output, the positional-argument check, $OA_HOME,
// and the flags several commands take (a release reference, a registry's
// transport, trusted signers, a signing key). It speaks cobra and flag
// names; the libraries it calls never do.
package cli
