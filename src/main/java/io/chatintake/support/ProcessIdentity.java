package io.chatintake.support;

import java.net.InetAddress;
import java.util.UUID;

/** How this process names itself in leases and claims: host, pid and a per-start suffix, never a secret. */
public final class ProcessIdentity {
    private static final String NAME = host() + ":" + ProcessHandle.current().pid() + ":" + UUID.randomUUID().toString().substring(0, 8);

    private ProcessIdentity() {
    }

    public static String name() {
        return NAME;
    }

    public static String host() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            return "unknown-host";
        }
    }
}
