package server

import "github.com/twmb/franz-go/pkg/kmsg"

// handler serves one API key over a range of versions. fn returns the
// response, or nil after setting r.later (answer off the reader goroutine)
// or r.noReply.
type handler struct {
	min, max int16
	fn       func(c *conn, r *request) kmsg.Response
}

// lookupHandler is the dispatch table: every API key the broker serves, with
// the versions it implements and tests (see broker/COMPAT.md). The minimum
// versions are Kafka 4.0's floor (KIP-896). A function rather than a map so
// that the ApiVersions handler can read it without an initialization cycle.
func lookupHandler(key int16) (handler, bool) {
	switch kmsg.Key(key) {
	case kmsg.Produce:
		return handler{3, 11, handleProduce}, true
	case kmsg.Fetch:
		return handler{4, 16, handleFetch}, true
	case kmsg.ListOffsets:
		return handler{1, 8, handleListOffsets}, true
	case kmsg.Metadata:
		return handler{0, 12, handleMetadata}, true
	case kmsg.ApiVersions:
		return handler{0, 4, handleApiVersions}, true
	case kmsg.CreateTopics:
		return handler{2, 7, handleCreateTopics}, true
	case kmsg.DeleteTopics:
		return handler{1, 6, handleDeleteTopics}, true
	case kmsg.DeleteRecords:
		return handler{0, 2, handleDeleteRecords}, true
	case kmsg.InitProducerID:
		return handler{0, 5, handleInitProducerID}, true
	case kmsg.OffsetForLeaderEpoch:
		return handler{2, 4, handleOffsetForLeaderEpoch}, true
	case kmsg.DescribeConfigs:
		return handler{1, 4, handleDescribeConfigs}, true
	case kmsg.AlterConfigs:
		return handler{0, 2, handleAlterConfigs}, true
	case kmsg.CreatePartitions:
		return handler{0, 3, handleCreatePartitions}, true
	case kmsg.IncrementalAlterConfigs:
		return handler{0, 1, handleIncrementalAlterConfigs}, true
	case kmsg.DescribeCluster:
		return handler{0, 1, handleDescribeCluster}, true
	case kmsg.FindCoordinator:
		return handler{0, 6, handleFindCoordinator}, true
	case kmsg.JoinGroup:
		return handler{0, 9, handleJoinGroup}, true
	case kmsg.SyncGroup:
		return handler{0, 5, handleSyncGroup}, true
	case kmsg.Heartbeat:
		return handler{0, 4, handleHeartbeat}, true
	case kmsg.LeaveGroup:
		return handler{0, 5, handleLeaveGroup}, true
	case kmsg.OffsetCommit:
		return handler{2, 9, handleOffsetCommit}, true
	case kmsg.OffsetFetch:
		return handler{1, 9, handleOffsetFetch}, true
	case kmsg.TxnOffsetCommit:
		return handler{0, 4, handleTxnOffsetCommit}, true
	case kmsg.ListGroups:
		return handler{0, 5, handleListGroups}, true
	case kmsg.DescribeGroups:
		return handler{0, 5, handleDescribeGroups}, true
	case kmsg.DeleteGroups:
		return handler{0, 2, handleDeleteGroups}, true
	case kmsg.OffsetDelete:
		return handler{0, 0, handleOffsetDelete}, true
	case kmsg.AddPartitionsToTxn:
		return handler{0, 4, handleAddPartitionsToTxn}, true
	case kmsg.AddOffsetsToTxn:
		return handler{0, 4, handleAddOffsetsToTxn}, true
	case kmsg.EndTxn:
		return handler{0, 4, handleEndTxn}, true
	case kmsg.WriteTxnMarkers:
		return handler{1, 1, handleWriteTxnMarkers}, true
	case kmsg.DescribeTransactions:
		return handler{0, 0, handleDescribeTransactions}, true
	case kmsg.ListTransactions:
		return handler{0, 2, handleListTransactions}, true
	case kmsg.ElectLeaders:
		return handler{0, 2, handleElectLeaders}, true
	case kmsg.AlterPartitionAssignments:
		return handler{0, 1, handleAlterPartitionReassignments}, true
	case kmsg.ListPartitionReassignments:
		return handler{0, 0, handleListPartitionReassignments}, true
	case kmsg.DescribeProducers:
		return handler{0, 0, handleDescribeProducers}, true
	}
	return handler{}, false
}
