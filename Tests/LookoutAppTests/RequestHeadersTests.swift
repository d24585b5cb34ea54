import Foundation
import LookoutApp
import LookoutTestSupport
import Testing

/// The server keeps only the request header fields Lookout reads (libmicrohttpd's memory
/// per connection stays small: lk_head.h), so a field read anywhere must be listed.
@Suite("Request header fields kept")
struct RequestHeadersTests {
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/LookoutApp")

    @Test("every header field a route reads is in the list the server keeps")
    func everyFieldReadIsKept() throws {
        let kept = Set(Application.requestHeaders.map { $0.lowercased() })
        let pattern = try NSRegularExpression(
            pattern: #"headers(?:\[|\.values\(named: |\.contains\()"([A-Za-z0-9-]+)""#)
        var read: Set<String> = []
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path).filter {
            $0.hasSuffix(".swift")
        }
        #expect(files.count > 10)
        for file in files {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                if let range = Range(match.range(at: 1), in: text) { read.insert(text[range].lowercased()) }
            }
        }
        #expect(read.contains("authorization"), "the scan finds header reads")
        #expect(read.subtracting(kept).isEmpty, "read but not kept: \(read.subtracting(kept).sorted())")
    }

    @Test("fields Lookout does not read cost nothing: a 12 KiB cookie is served; read fields over 1.5 KiB are 431")
    func unreadFieldsAreDropped() async throws {
        try await withApp { app in
            let cookie = ("Cookie", "session=" + String(repeating: "c", count: 12 * 1024))
            let agent = ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36")
            let answer = try await app.request("GET", "/v1/galleries/1", headers: [cookie, agent])
            #expect(answer.status == 200)
            let long = ("Authorization", "Bearer " + String(repeating: "t", count: 3_000))
            let refused = try await app.request("GET", "/v1/galleries/1", headers: [long])
            #expect(refused.status == 431)
            #expect(try refused.json["error"]?["code"] == "header_fields_too_large")
            let usual = ("Authorization", "Bearer " + String(repeating: "t", count: 1_300))
            #expect(try await app.request("GET", "/v1/galleries/1", headers: [usual, cookie]).status == 200)
        }
    }

    @Test("the largest head libmicrohttpd is given, 1.5 KiB in 12 fields, fits its 2.75 KiB and is answered")
    func largestKeptHead() async throws {
        try await withApp { app in
            let port = app.port
            // Host, Authorization, 9 If-None-Match and Connection: 12 fields.
            let fixed =
                "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
                + String(repeating: "If-None-Match: \"x\"\r\n", count: 9)
                + "Connection: close\r\n"
            let authorization = "Authorization: Bearer \r\n"
            let filler = 1_536 - fixed.utf8.count - authorization.utf8.count - "\r\n".utf8.count
            let headers =
                [("Authorization", "Bearer " + String(repeating: "t", count: filler))]
                + Array(repeating: ("If-None-Match", #""x""#), count: 9) + [("Connection", "close")]
            let fits = try await app.request("GET", "/v1/galleries/1?fields=title", headers: headers)
            #expect(fits.status == 200)
            let over = try await app.request(
                "GET", "/v1/galleries/1", headers: [(headers[0].0, headers[0].1 + "t")] + headers.dropFirst())
            #expect(over.status == 431)
            let more = try await app.request("GET", "/v1/galleries/1", headers: headers + [("If-Match", "*")])
            #expect(more.status == 431, "13 fields")
        }
    }
}
