package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.BotApiSimulator.Poll;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How the chaos run tells pollers apart: the owner of a loopback connection, and polls of two owners in flight at once. */
class SocketOwnersTest {
    @Test
    void theProcessHoldingTheClientEndOfAConnectionIsNamed() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             Socket client = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
             Socket accepted = server.accept()) {
            InetSocketAddress seenByServer = (InetSocketAddress) accepted.getRemoteSocketAddress();
            SocketOwners owners = new SocketOwners(server.getLocalPort(), () -> Map.of(ProcessHandle.current().pid(), "this test"));
            assertThat(owners.owner(seenByServer)).isEqualTo("this test");
            assertThat(new SocketOwners(server.getLocalPort(), Map::of).owner(seenByServer)).as("not one of ours").isNull();
            assertThat(client.isConnected()).isTrue();
        }
    }

    @Test
    void pollsOfTwoProcessesInFlightAtOnceAreReportedAndHandOversAreNot() {
        Instant t = Instant.parse("2026-07-01T09:00:00Z");
        Poll first = new Poll("runner 1", t, t.plusSeconds(1));
        Poll sameProcess = new Poll("runner 1", t.plusMillis(500), t.plusSeconds(2));
        Poll afterHandOver = new Poll("runner 2", t.plusSeconds(10), t.plusSeconds(11));
        assertThat(Chaos.overlappingPolls(List.of(first, sameProcess, afterHandOver))).isEmpty();

        Poll intruder = new Poll("runner 3", t.plusMillis(1_500), t.plusMillis(1_600));
        assertThat(Chaos.overlappingPolls(List.of(afterHandOver, intruder, first, sameProcess)))
                .singleElement().asString().startsWith("runner 1 ").contains(" and runner 3 ");
    }
}
