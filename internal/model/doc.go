// Package model is offlinelock's parsed lock model, what gorm's schema
// package is to gorm: what the lock struct tags say of each GORM model
// (`lock:"exclusive_write|exclusive_read|read_write[,ttl=…]"` on the
// primary key, `lock:"root"` or `lock:"root=<table>"` on a member's
// foreign key), its key columns and how the lock table spells their
// values, the aggregates members belong to, the many2many join tables and
// cascading foreign keys that link tables, and the lock tags that slipped
// where the plugin does not read them.
//
// It reads models and Go values and never runs a statement: the root
// package takes the locks, reads rows and keeps the catalog. It imports
// internal/lockstore for the key types and ErrInvalid, never the root.
// A tag's error names the model and the field, and wraps ErrInvalid.
//
// The API, on one screen:
//
//	Model, RootRef, Mode            one model's mode, TTL, key, kinds, root, error
//	  Policy, Chain, LockResource   whose mode applies; a member's parents; its lock's table
//	  LocksOnLoad, KeyColumns       whether loads lock; what a key column check sees
//	  IDText, RowKey, KeyArgs       key values spelt, a struct's key, values as the database compares them
//	Registry                        the models of one plugin (its zero value is ready)
//	  ModelOf, Known, Resolve       parse a schema once; resolve a member's root chain
//	  TableModel, StoreTable, StoreAlias, Lockable, LockedOnLoad
//	                                lockable models by table
//	  JoinSides, JoinsOf, AddJoinSide, JoinOwners   many2many join tables (JoinSide, JoinRef, JoinOwner)
//	  CascadesOf, CascadesFrom, AddCascade, Cascades cascading foreign keys (CascadeRef, ParentRef)
//	  WalkCascades                  the rows a write reaches through them (CascadeStep)
//	  RootKeys, Model.RootLinks     from members to their aggregate root's keys (LinkReader)
//	  PartialJoin                   a join table without a lockable side's whole key
//	  Changes, TablesGen            counters a caller compares to see growth (fields)
//	KindOf, Canonical, EncodeKey, KeyText, TextKey, IsNumber
//	                                a key column's kind, and one spelling per value
//	ValidateKey, CheckText, MaxResourceLen, MaxTextLen
//	                                what the lock table can hold
//	StructsOf, ValueRows, MapKeysNaming, NamesField, WritesParentKey
//	                                key values read from structs, maps, slices and updates
//	ParentNamed, NamesOnly, SelectIn, JoinOwner.InsertedRows
//	                                a write's parent named by table; a walk's read; a join Create's keys
//	TagName, TagSlip, NotLockable   the tag; a slipped one; the error that names it
//	Spec, SpecOf, Learn, Rows, Specs, SpecField
//	                                the catalog's rows: a model's, and models known by them
//	Aggregate, LearnParsed          a model's aggregate; the models GORM parsed
package model
