/// A client of a server-sent event stream, as a browser's `EventSource` reads it: the
/// response head, then one event at a time (WHATWG HTML §9.2 "Interpreting an event
/// stream": `field: value` lines, comment lines starting with `:`, a blank line ending an
/// event).
/// `@unchecked Sendable`: used by one task at a time (handed to a thread off the pool to
/// block on its socket), never concurrently.
public final class TestEventStream: @unchecked Sendable {
    /// One event, or one comment line.
    public struct Event: Equatable, Sendable {
        /// `event:`; nil for the default ("message").
        public var name: String?
        /// `data:` lines, joined with line feeds.
        public var data: String?
        public var id: String?
        public var retry: String?
        /// The text of a comment line (`: heartbeat` gives "heartbeat").
        public var comment: String?
    }

    public let connection: TestHTTPConnection
    public let head: TestHTTPResponse
    private var text: [UInt8] = []
    /// True once the response has ended (its last chunk read).
    public private(set) var ended = false

    /// Sends `GET target` with `Accept: text/event-stream` and `headers`, and reads the head.
    public init(host: String = "127.0.0.1", port: Int, target: String, headers: [(String, String)] = []) throws {
        connection = try TestHTTPConnection(host: host, port: port)
        try connection.send(
            "GET \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\nAccept: text/event-stream\r\n"
                + headers.map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n")
        head = try connection.readHead()
    }

    /// The next event or comment; nil when the stream ended. Waits as long as the
    /// connection's timeout (60 s) for it.
    public func next() throws -> Event? {
        while true {
            if let event = takeEvent() { return event }
            guard !ended, let chunk = try connection.readChunk() else {
                ended = true
                return nil
            }
            text += chunk
        }
    }

    /// The next event with data (not a comment, nor a lone `retry:`); nil when the stream
    /// ended.
    public func nextEvent() throws -> Event? {
        while let event = try next() {
            if event.data != nil { return event }
        }
        return nil
    }

    /// Parses one event (or comment) from the text received, if a whole one is there.
    private func takeEvent() -> Event? {
        var event = Event()
        var index = text.startIndex
        while let newline = text[index...].firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: text[index..<newline], as: UTF8.self)
            index = newline + 1
            if line.isEmpty {
                text.removeSubrange(..<index)
                index = text.startIndex
                if event == Event() { continue }  // the blank line after a comment
                return event
            }
            if line.hasPrefix(":"), event == Event() {
                text.removeSubrange(..<index)
                return Event(comment: String(line.dropFirst().trimmingPrefix(" ")))
            }
            let (field, value) =
                line.firstIndex(of: ":").map {
                    (String(line[..<$0]), String(line[line.index(after: $0)...].trimmingPrefix(" ")))
                } ?? (line, "")
            switch field {
            case "event": event.name = value
            case "data": event.data = event.data.map { $0 + "\n" + value } ?? value
            case "id": event.id = value
            case "retry": event.retry = value
            default: break
            }
        }
        return nil
    }
}
