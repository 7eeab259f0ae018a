// Package rowcodec holds the binary encodings of rows that the store keeps in Pebble
// (gateway/store/doc.go):
//
//   - EncodeKey and AppendKey: the memcomparable encoding of a row's primary-key values, so that
//     bytes.Compare orders keys like their values and no key is a prefix of another;
//     AppendEscaped is its string encoding, which the store also uses for partition names.
//   - EncodeValue, AppendValue, DecodeValue and ValueDecoder: the compact encoding of a full row
//     (null bitmap, then varints, IEEE-754 bits and length-prefixed bytes).
//
// The layouts are documented at the top of codec.go; they are on-disk format: changing one makes
// existing warehouses unreadable. Rows are merge.Row values with the Go types of gateway/row's
// package comment. Encoders panic on a value whose Go type does not fit its column (rows are
// validated before they reach the store); DecodeValue returns an error for malformed bytes.
//
// The package is pure: no I/O, no global state.
package rowcodec
