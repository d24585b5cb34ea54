import Foundation
import Synchronization
import Testing

@testable import LookoutApp

@Suite("Deadline timer", .timeLimit(.minutes(1)))
struct DeadlineTimerTests {
    @Test("a held poll's jitter is spread over its whole range, and never repeats a draw")
    func jitterSpread() {
        var generator = JitterGenerator()
        let draws = (0..<4096).map { _ in Double.random(in: 0...1, using: &generator) }
        #expect(Set(draws).count == draws.count)
        // Sixteen bins of 256 expected each; a generator stuck in part of the range fails.
        var bins = [Int](repeating: 0, count: 16)
        for draw in draws { bins[min(15, Int(draw * 16))] += 1 }
        #expect(bins.allSatisfy { (128...384).contains($0) }, "\(bins)")
    }

    @Test("actions run in deadline order, not before their deadline; cancelled ones never run and are freed")
    func orderAndCancel() async throws {
        let timer = DeadlineTimer()
        defer { timer.stop() }
        let fired = Mutex<[Int]>([])
        let start = ContinuousClock.now
        let times = Mutex<[Int: Duration]>([:])
        for (index, delay) in [(3, 90), (1, 30), (2, 60)] {
            _ = timer.schedule(after: .milliseconds(delay)) {
                fired.withLock { $0.append(index) }
                times.withLock { $0[index] = ContinuousClock.now - start }
            }
        }
        let cancelled = timer.schedule(after: .milliseconds(45)) { fired.withLock { $0.append(99) } }
        #expect(timer.isPending(cancelled))
        #expect(timer.cancel(cancelled))
        #expect(!timer.cancel(cancelled))
        #expect(timer.pendingCount == 3)
        for _ in 0..<300 where fired.withLock({ $0.count }) < 3 {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(fired.withLock { $0 } == [1, 2, 3])
        #expect(times.withLock { $0[1]! } >= .milliseconds(30))
        #expect(times.withLock { $0[3]! } >= .milliseconds(90))
        #expect(timer.pendingCount == 0)
    }

    @Test("an earlier deadline scheduled later still fires first")
    func earlierDeadlineWakesTheThread() async throws {
        let timer = DeadlineTimer()
        defer { timer.stop() }
        let fired = Mutex<[String]>([])
        // "late" is an hour away, so that however slowly a loaded machine runs this test,
        // only "soon" can have fired when the check below comes.
        _ = timer.schedule(after: .seconds(3600)) { fired.withLock { $0.append("late") } }
        _ = timer.schedule(after: .milliseconds(20)) { fired.withLock { $0.append("soon") } }
        let giveUp = ContinuousClock.now + .seconds(60)
        while fired.withLock({ $0.isEmpty }) && ContinuousClock.now < giveUp {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(fired.withLock { $0 } == ["soon"])
    }

    @Test("a cancelled action is released at once, and cancelled entries leave the heap when they are most of it")
    func cancelledAreReleasedAndCompacted() {
        let timer = DeadlineTimer()
        defer { timer.stop() }
        final class Held: Sendable {}
        let count = 5000
        // A pending entry ahead of all the others, and the timer's thread waiting for it
        // before anything else is scheduled: a thread that first ran in the middle of the
        // cancels (a late start on a busy machine) compacted the heap itself, and left fewer
        // than the smallest compaction for the schedule below (665 entries once).
        let keeper = timer.schedule(after: .seconds(300)) {}
        let giveUp = ContinuousClock.now + .seconds(60)
        while !timer.isWaitingForDeadline && ContinuousClock.now < giveUp { sched_yield() }
        #expect(timer.isWaitingForDeadline)
        var tokens: [DeadlineTimer.Token] = []
        var watched: [() -> Held?] = []
        for _ in 0..<count {
            let held = Held()
            weak let weakHeld = held
            watched.append { weakHeld }
            tokens.append(timer.schedule(after: .seconds(600)) { _ = held })
        }
        #expect(timer.heapCount == count + 1)
        for token in tokens { #expect(timer.cancel(token)) }
        #expect(watched.allSatisfy { $0() == nil }, "a cancelled action's captures outlived its cancel")
        #expect(timer.pendingCount == 1)
        // The next schedule finds the heap mostly cancelled and rebuilds it with the two left.
        let last = timer.schedule(after: .seconds(600)) {}
        #expect(timer.heapCount == 2)
        #expect(timer.isPending(last) && timer.isPending(keeper))
        #expect(timer.pendingCount == 2)
    }

    @Test("a crowd of cancelled deadlines wakes the timer once, not once each")
    func cancelledDeadlinesDoNotWakeTheTimer() async throws {
        let timer = DeadlineTimer()
        defer { timer.stop() }
        // A fan-out's polls: deadlines 250 µs apart over half a second, all cancelled at once.
        let count = 2000
        let tokens = (0..<count).map { index in
            timer.schedule(after: .milliseconds(100) + .microseconds(250 * index)) {}
        }
        let ran = Mutex(false)
        _ = timer.schedule(after: .milliseconds(800)) { ran.withLock { $0 = true } }
        let before = timer.wakeCount
        for token in tokens { #expect(timer.cancel(token)) }
        for _ in 0..<6000 where !ran.withLock({ $0 }) {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(ran.withLock { $0 })
        // One wake at the first cancelled deadline, one for the live one, and slack for the
        // first schedule's signal and a spurious wake. Waking for each cancelled deadline
        // as it comes makes hundreds, even on a busy machine that oversleeps each by 10 ms.
        let wakes = timer.wakeCount - before
        #expect(wakes <= 6, "\(wakes) wakes for \(count) cancelled deadlines and one live one")
        #expect(timer.heapCount == 0)
    }

    @Test("deadlines within the coalescing time of the first run in one wake, none before its deadline")
    func coalescedDeadlines() async throws {
        let timer = DeadlineTimer(coalescing: .milliseconds(50))
        defer { timer.stop() }
        let start = ContinuousClock.now
        // 100 deadlines over 30 ms: the timer sleeps until the first plus 50 ms.
        let delays = (0..<100).map { Duration.milliseconds(100) + .microseconds(300 * $0) }
        let ran = Mutex<[(delay: Duration, at: Duration, wake: Int)]>([])
        for delay in delays {
            _ = timer.schedule(after: delay) {
                let at = ContinuousClock.now - start
                ran.withLock { $0.append((delay, at, timer.wakeCount)) }
            }
        }
        for _ in 0..<6000 where ran.withLock({ $0.count }) < delays.count {
            try await Task.sleep(for: .milliseconds(5))
        }
        let runs = ran.withLock { $0 }
        #expect(runs.count == delays.count)
        #expect(runs.allSatisfy { $0.at >= $0.delay }, "an action ran before its deadline")
        #expect(Set(runs.map(\.wake)).count == 1, "the deadlines ran in \(Set(runs.map(\.wake)).count) wakes")
        #expect(runs.map(\.delay) == delays, "not in deadline order")
    }

    @Test("cancels racing the timer from several threads settle each action once: run or cancelled")
    func racingCancels() async throws {
        let timer = DeadlineTimer()
        defer { timer.stop() }
        let count = 4000
        let ran = Mutex<Set<Int>>([])
        let tokens = (0..<count).map { index in
            timer.schedule(after: .microseconds(Int64(index % 200) * 10)) { _ = ran.withLock { $0.insert(index) } }
        }
        // Two threads cancel every token, so each is cancelled by both or raced by the timer.
        let cancelled = await withTaskGroup(of: [Int].self) { group in
            for _ in 0..<2 {
                group.addTask { tokens.indices.filter { timer.cancel(tokens[$0]) } }
            }
            return await group.reduce(into: [Int]()) { $0 += $1 }
        }
        // Settled is not yet run: wait for the actions taken from the heap to have run.
        for _ in 0..<2000 where ran.withLock({ $0.count }) + cancelled.count < count {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(timer.pendingCount == 0)
        let ranNow = ran.withLock { $0 }
        #expect(Set(cancelled).count == cancelled.count, "a token was cancelled twice")
        #expect(ranNow.isDisjoint(with: cancelled), "an action ran after its cancel succeeded")
        #expect(ranNow.count + cancelled.count == count)
    }
}
