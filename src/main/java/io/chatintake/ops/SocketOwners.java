package io.chatintake.ops;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * Which of our child processes owns the client end of a loopback TCP connection, from Linux's
 * /proc: the connection's socket inode in /proc/net/tcp(6), then the process whose fd links to
 * it. The chaos run names each getUpdates' poller by it, since the Bot API sees only addresses.
 */
public final class SocketOwners {
    private final int serverPort;
    private final Supplier<Map<Long, String>> processes;
    private final Map<String, String> ownerByInode = new ConcurrentHashMap<>();

    /**
     * @param serverPort the port the connections go to
     * @param processes  pid to name of the processes that may own them, as they are now
     */
    public SocketOwners(int serverPort, Supplier<Map<Long, String>> processes) {
        this.serverPort = serverPort;
        this.processes = processes;
    }

    /** The owner's name, or null when no process of ours holds the connection (or not on Linux). */
    public String owner(InetSocketAddress client) {
        Optional<String> inode = inode(client.getPort());
        if (inode.isEmpty()) {
            return null;
        }
        String known = ownerByInode.get(inode.get());
        if (known != null) {
            return known;
        }
        String link = "socket:[" + inode.get() + "]";
        for (Map.Entry<Long, String> process : processes.get().entrySet()) {
            try (Stream<Path> fds = Files.list(Path.of("/proc", Long.toString(process.getKey()), "fd"))) {
                if (fds.anyMatch(fd -> link.equals(readLink(fd)))) {
                    ownerByInode.put(inode.get(), process.getValue());
                    return process.getValue();
                }
            } catch (IOException e) {
                // that process is gone: not the owner
            }
        }
        return null;
    }

    /** The inode of the socket from {@code clientPort} to the server port, from the kernel's TCP tables. */
    private Optional<String> inode(int clientPort) {
        String local = String.format(":%04X", clientPort);
        String remote = String.format(":%04X", serverPort);
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            try (Stream<String> lines = Files.lines(Path.of(table))) {
                Optional<String> inode = lines.skip(1).map(String::trim).map(l -> l.split("\\s+"))
                        .filter(f -> f.length > 9 && f[1].endsWith(local) && f[2].endsWith(remote) && !"0".equals(f[9]))
                        .map(f -> f[9]).findFirst();
                if (inode.isPresent()) {
                    return inode;
                }
            } catch (IOException e) {
                // not Linux, or no IPv6: try the next table
            }
        }
        return Optional.empty();
    }

    private static String readLink(Path fd) {
        try {
            return Files.readSymbolicLink(fd).toString();
        } catch (IOException e) {
            return "";
        }
    }
}
