// Package approval serves the links a human approver follows to decide a
// waiting human step: signed, expiring and single-use.
//
// A link carries a token made by [Signer.Sign]: the approval's ID and the
// link's expiry, with an HMAC-SHA256 over both, base64url-encoded so that
// it fits a URL path segment:
//
//	https://stepline.example.com/approvals/<base64url(id|expiry)>.<base64url(mac)>
//
// [Signer.Verify] refuses a token whose MAC does not check ([ErrForged]) and
// one past its expiry ([ErrExpired]), so a link can be neither made up nor
// altered (extending its expiry breaks the MAC). The approval ID inside is
// 256 random bits ([store.NewApprovalID]); the task token that resumes the
// run never leaves the server.
//
// [Service] turns a verified link into a decision: [Service.Page] shows what
// is asked, [Service.Decide] records the decision with the store's
// single conditional write (a second decision, even the same one, is
// [ErrDecided]; a decision at or after the approval's expiry is
// [ErrExpired]) and then resumes the run through Complete, the same call
// the local engine and the AWS callback function make with the task token.
// A resume that fails after the record ([ErrResume]) would leave the run
// waiting on a decided approval: a later decision of it, [ResendAfter] or
// more after the first, is still [ErrDecided] but sends the recorded
// decision again (never its own), which resumes such a run and does
// nothing to one that went on.
//
// [Service.Handler] serves GET /approvals/{token} (a confirmation page with
// approve and reject buttons; no script) and POST /approvals/{token} (the
// decision). A GET never decides, so link previews and crawlers cannot
// approve anything; the token in the path is the capability, so a POST
// needs no other CSRF token. Pages are never cached, never framed and send
// no Referer, so the token does not leak to other sites.
//
// With a Feedback store, the page also lets the approver mark the step's
// answer correct, partial or incorrect (radio buttons and notes, still no
// script): the mark is posted with the decision and recorded as the
// step's feedback (for a human check, the checked step's), a calibration
// label. It rides on the decision's single use: the same request must
// decide, so a link that decided already marks nothing, and no new
// unauthenticated write exists. A bad mark is refused (400) before
// anything is decided; a mark the store refuses is logged and the
// decision stands.
package approval
