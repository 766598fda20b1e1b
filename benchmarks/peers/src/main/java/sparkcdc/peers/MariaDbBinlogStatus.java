package sparkcdc.peers;

import com.mysql.cj.MysqlConnection;
import com.mysql.cj.Query;
import com.mysql.cj.interceptors.QueryInterceptor;
import com.mysql.cj.log.Log;
import com.mysql.cj.protocol.Resultset;
import com.mysql.cj.protocol.ServerSession;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Properties;
import java.util.function.Supplier;

/**
 * Lets Debezium 3.6's MySQL connector read MariaDB's binlog position. The connector takes any server whose
 * version is above 8.4 (MariaDB's 10.11 is) for a MySQL that knows {@code SHOW BINARY LOG STATUS}, and gives up when
 * the statement fails; MariaDB spells it {@code SHOW MASTER STATUS} (same columns but the GTID set). Debezium's
 * MariaDB connector, which knows this, is not on Maven Central. Installed on the connector's JDBC connections with
 * {@code driver.queryInterceptors=sparkcdc.peers.MariaDbBinlogStatus}; every other statement passes untouched.
 */
public final class MariaDbBinlogStatus implements QueryInterceptor {
    private MysqlConnection connection;

    @Override
    public QueryInterceptor init(MysqlConnection conn, Properties props, Log log) {
        this.connection = conn;
        return this;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T extends Resultset> T preProcess(Supplier<String> sql, Query query) {
        String text = sql == null ? null : sql.get();
        if (text == null || !text.trim().equalsIgnoreCase("SHOW BINARY LOG STATUS")) {
            return null;
        }
        try {
            return (T) ((Connection) connection).createStatement().executeQuery("SHOW MASTER STATUS");
        } catch (SQLException e) {
            throw new IllegalStateException("SHOW MASTER STATUS failed: " + e.getMessage(), e);
        }
    }

    @Override
    public boolean executeTopLevelOnly() {
        return true;
    }

    @Override
    public void destroy() {}

    @Override
    public <T extends Resultset> T postProcess(Supplier<String> sql, Query query, T result, ServerSession session) {
        return null;
    }
}
