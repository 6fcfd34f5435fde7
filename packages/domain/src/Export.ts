import { Schema } from "effect"
import { Todo } from "./Event.js"
import { MessageWithParts } from "./Message.js"
import { Session } from "./Session.js"

/** A session tree as JSON: OpenCode's `{info, messages}` export plus todos and child sessions. */
export interface SessionExport {
  readonly info: Session
  readonly messages: ReadonlyArray<MessageWithParts>
  readonly todos?: ReadonlyArray<Todo> | undefined
  readonly children?: ReadonlyArray<SessionExport> | undefined
}

export interface SessionExportEncoded {
  readonly info: typeof Session.Encoded
  readonly messages: ReadonlyArray<typeof MessageWithParts.Encoded>
  readonly todos?: ReadonlyArray<typeof Todo.Encoded> | undefined
  readonly children?: ReadonlyArray<SessionExportEncoded> | undefined
}

export const SessionExport: Schema.Schema<SessionExport, SessionExportEncoded> = Schema.Struct({
  info: Session,
  messages: Schema.Array(MessageWithParts),
  todos: Schema.optional(Schema.Array(Todo)),
  children: Schema.optional(Schema.Array(Schema.suspend((): Schema.Schema<SessionExport, SessionExportEncoded> => SessionExport)))
})
