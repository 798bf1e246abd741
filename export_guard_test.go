package offlinelock

// TableName is the lock table's name, for tests.
func (p *Plugin) TableName() string { return p.cfg.Table }
