// Package partname implements Hive-style partition names (proto/README.md "Partition names"):
// Of names the partition of a row ("k1=v1/k2=v2" over the partition keys, values in a canonical
// string form, '%', '/', '=' and control characters escaped as %XX), Validate accepts exactly
// the names Of can produce (readers name partitions in tickets), and CheckValue refuses
// partition-key values that have no such name.
//
// The Java connector computes the same names (io.setats.flink.utils.PartitionNames).
//
// The package is pure: no I/O, no global state.
package partname
