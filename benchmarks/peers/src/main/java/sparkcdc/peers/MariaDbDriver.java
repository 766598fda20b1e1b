package sparkcdc.peers;

import java.sql.Connection;
import java.sql.Driver;
import java.sql.DriverManager;
import java.sql.DriverPropertyInfo;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Properties;
import java.util.logging.Logger;

/**
 * MySQL Connector/J with {@link MariaDbBinlogStatus} installed, under the URL prefix {@code jdbc:peers-mysql:}.
 * Debezium strips {@code queryInterceptors} from the connector's driver properties, so the interceptor is added
 * here: {@code database.jdbc.driver=sparkcdc.peers.MariaDbDriver} and {@code database.protocol=jdbc:peers-mysql}.
 */
public final class MariaDbDriver implements Driver {
    private static final String PREFIX = "jdbc:peers-mysql:";
    private final Driver mysql;

    static {
        try {
            DriverManager.registerDriver(new MariaDbDriver());
        } catch (SQLException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    public MariaDbDriver() throws SQLException {
        this.mysql = new com.mysql.cj.jdbc.Driver();
    }

    @Override
    public Connection connect(String url, Properties info) throws SQLException {
        if (!acceptsURL(url)) {
            return null;
        }
        Properties props = new Properties();
        if (info != null) {
            props.putAll(info);
        }
        props.setProperty("queryInterceptors", MariaDbBinlogStatus.class.getName());
        return mysql.connect("jdbc:mysql:" + url.substring(PREFIX.length()), props);
    }

    @Override
    public boolean acceptsURL(String url) {
        return url != null && url.startsWith(PREFIX);
    }

    @Override
    public DriverPropertyInfo[] getPropertyInfo(String url, Properties info) throws SQLException {
        return mysql.getPropertyInfo("jdbc:mysql:" + url.substring(PREFIX.length()), info);
    }

    @Override
    public int getMajorVersion() {
        return mysql.getMajorVersion();
    }

    @Override
    public int getMinorVersion() {
        return mysql.getMinorVersion();
    }

    @Override
    public boolean jdbcCompliant() {
        return mysql.jdbcCompliant();
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        return mysql.getParentLogger();
    }
}
