import Foundation
import LookoutAuth
import Testing

@Suite("Base64URL")
struct Base64URLTests {
    @Test("round-trips every length against Foundation's base64")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == foundation)
            #expect(Base64URL.decode(foundation) == bytes)
        }
    }

    @Test("refuses padding, the other alphabet, impossible lengths and leftover bits")
    func refuses() {
        for text in ["QQ==", "a+b/", "QUJD?", "Q", "QUJDR", "QR", "QUF", "AB"] {
            #expect(Base64URL.decode(text) == nil, "\(text)")
        }
        #expect(Base64URL.decode("QQ") == [65])
        #expect(Base64URL.decode("QUE") == [65, 65])
        #expect(Base64URL.decode(String(repeating: "A", count: 20), limit: 16) == nil)
    }
}
