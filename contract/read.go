package contract

// readCopy is the copy of the reasons a read-only capability tool answers
// with whose run copy does not fit a read: a read changes nothing and
// takes no request_id, so it is read again, never retried "with the same
// request_id".
var readCopy = map[Reason][2]string{
	ReasonAppOffline: {"The app was offline; nothing was read.",
		"Read again later."},
	ReasonReadFailed: {"Reading from the app failed; nothing was changed.",
		"Read again later."},
	ReasonTargetRefused: {"The app refused the read (the record is missing or the request is not one it takes); nothing was changed.",
		"Check the arguments against this tool's inputSchema; if they are right, tell the person the record could not be read."},
	ReasonInvalidInputs: {"The arguments do not match this tool's input schema, so nothing was read.",
		"Check the arguments against this tool's inputSchema and read again."},
	ReasonAppCredentials: {"The app refused this host's credentials; nothing was read.",
		"Tell the operator the connection's login or token needs renewing; read again after they fix it."},
	ReasonAppSettingMissing: {"The app could not be started: a setting its connection needs is not set on this host; nothing was read.",
		"Tell the operator the connection is missing a setting (oa harness inspect names it); read again after they set it."},
}

// ReadInfo returns r's fixed contract as a read-only capability tool
// answers it: Info, with the copy of a read where a run's does not fit.
func (r Reason) ReadInfo() (info ReasonInfo, ok bool) {
	info, ok = r.Info()
	if c, found := readCopy[r]; found && ok {
		info.WhatHappened, info.NextAction = c[0], c[1]
	}
	return info, ok
}
