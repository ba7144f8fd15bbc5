// Package telegram is a small client of the Telegram Bot API: the calls
// Stepline's notifications and chat approvals make (sendMessage,
// editMessageText, answerCallbackQuery, getUpdates), the update types they
// read, and the Telegram HTML the messages are written in.
//
// The bot token is part of every request URL
// (https://api.telegram.org/bot<token>/<method>), so a [Client] scrubs it
// from every error it returns: a network error's URL is dropped, and the
// Bot API's description is redacted as well.
//
// Messages use the HTML parse mode. Text that is data (events, model
// replies, approver names) goes through [Escape] or [EscapeData]; the
// template an author writes may use the tags Telegram knows (b, i, u, s,
// a, code, pre, blockquote, …). [Sanitize] makes any text well formed
// Telegram HTML, so that the Bot API never refuses a message for its
// markup: unknown tags and stray &, < and > become text, open tags are
// closed. [Cut] also shortens a message to the Bot API's 4096 characters
// without cutting a tag or an entity, ending it with "[truncated]".
//
// A webhook's updates are authenticated with the secret_token given to
// setWebhook, which Telegram sends in the X-Telegram-Bot-Api-Secret-Token
// header: [CheckSecret] compares it in constant time.
package telegram
