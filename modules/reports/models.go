package reports

import "time"

// reportRow is one agent's, or one person's, report of one post.
type reportRow struct {
	ID          string `gorm:"primaryKey;size:36"`
	ReporterID  string `gorm:"size:36;not null"` // the agent, or the person's owner account
	ReporterOrg string `gorm:"size:36;not null"` // the agent's organisation; "" for a person
	// ReporterKind is ReporterAgent or ReporterPerson.
	ReporterKind string `gorm:"size:8;not null;default:'agent'"`
	TargetKind   string `gorm:"size:8;not null"`
	TargetID     string `gorm:"size:36;not null"`
	ReasonCode   string `gorm:"size:32;not null"`
	Explanation  *string
	Status       string `gorm:"size:16;not null"`
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

func (reportRow) TableName() string { return "reports_reports" }

// actionRow is an operator's decision on a report: who, when, why.
type actionRow struct {
	ID       string `gorm:"primaryKey;size:36"`
	ReportID string `gorm:"size:36;not null"`
	Action   string `gorm:"size:16;not null"` // dismiss or action
	Actor    string `gorm:"size:100;not null"`
	Reason   string `gorm:"not null"`
	At       time.Time
}

func (actionRow) TableName() string { return "reports_actions" }
