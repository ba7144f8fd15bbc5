package dynamo

// TableSchema is the table the store expects: its keys, indexes and TTL
// attribute. Every key attribute is a string (S); billing is on demand.
// The CDK stack declares the table from it, and the tests create their
// tables in DynamoDB Local from it (package dynamotest).
type TableSchema struct {
	PartitionKey string
	SortKey      string
	Indexes      []IndexSchema
	// TTLAttribute is the number attribute (epoch seconds) DynamoDB's TTL
	// reads.
	TTLAttribute string
}

// IndexSchema is a global secondary index. Its projection is INCLUDE
// NonKeyAttributes.
type IndexSchema struct {
	Name             string
	PartitionKey     string
	SortKey          string
	NonKeyAttributes []string
}

// KeyAttributes returns every key attribute of the table and its indexes,
// the table's own first: the attribute definitions of a CreateTable.
func (t TableSchema) KeyAttributes() []string {
	out := []string{t.PartitionKey, t.SortKey}
	for _, ix := range t.Indexes {
		out = append(out, ix.PartitionKey, ix.SortKey)
	}
	return out
}

// Schema returns the store's table schema (see the package doc).
func Schema() TableSchema {
	return TableSchema{
		PartitionKey: AttrPK,
		SortKey:      AttrSK,
		Indexes: []IndexSchema{
			{Name: IndexByPipeline, PartitionKey: AttrGSI1PK, SortKey: AttrGSI1SK, NonKeyAttributes: ProjectedAttributes()},
			{Name: IndexByStatus, PartitionKey: AttrGSI2PK, SortKey: AttrGSI2SK, NonKeyAttributes: ProjectedAttributes()},
		},
		TTLAttribute: AttrTTL,
	}
}
