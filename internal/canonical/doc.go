// Package canonical implements the JSON Canonicalization Scheme (JCS) of
// RFC 8785. The canonical form is what oa hashes and signs: Worker IR,
// admission records and plans are canonicalized before hashing, so two
// producers that serialize the same data differently still agree on the
// digest.
//
// The canonical form of a JSON value is:
//
//   - no insignificant whitespace;
//   - object members sorted by name, names compared as sequences of UTF-16
//     code units (not UTF-8 bytes, and without any locale or normalization);
//   - strings written with the escapes \" \\ \b \f \n \r \t and, for the
//     remaining control characters below U+0020, \u00xx with lowercase hex;
//     every other character (including U+2028, U+2029, '<', '>', '&', DEL and
//     all non-ASCII) is written literally as UTF-8;
//   - numbers written as ECMAScript's Number.prototype.toString renders the
//     nearest IEEE 754 binary64 value: 1.0 becomes 1, 1E30 becomes 1e+30,
//     -0 becomes 0, 1e20 becomes 100000000000000000000, 0.0000001 becomes
//     1e-7 and 12345678901234567890 becomes 12345678901234567000;
//   - the literals true, false and null unchanged.
//
// Input is also held to the I-JSON (RFC 7493) restrictions that JCS relies
// on. [Transform] refuses, with a [*SyntaxError] that carries the byte offset
// of the problem: text that is not exactly one JSON value (optionally
// surrounded by whitespace), invalid UTF-8, escapes that encode a lone UTF-16
// surrogate, objects with two members of the same name (compared after
// unescaping), numbers whose magnitude overflows binary64 (such as 1e400) and
// nesting deeper than [MaxDepth].
//
// Numbers that underflow (such as 1e-400) are rounded to the nearest
// binary64 value like any other number, which may be zero.
package canonical
