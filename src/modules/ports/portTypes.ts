// A port's `type` is derived from (number, protocol) for well-known ports, else `Custom`
// (Scanopy's names; the reference lists ~56, these are the common ones).
export type Protocol = 'Tcp' | 'Udp';

const WELL_KNOWN: Record<string, string> = {
  '20/Tcp': 'FtpData', '21/Tcp': 'Ftp', '22/Tcp': 'Ssh', '23/Tcp': 'Telnet', '25/Tcp': 'Smtp', '53/Tcp': 'Dns',
  '53/Udp': 'DnsUdp', '67/Udp': 'Dhcp', '69/Udp': 'Tftp', '80/Tcp': 'Http', '110/Tcp': 'Pop3', '123/Udp': 'Ntp',
  '137/Udp': 'NetBios', '139/Tcp': 'Samba', '143/Tcp': 'Imap', '161/Udp': 'Snmp', '162/Udp': 'SnmpTrap',
  '389/Tcp': 'Ldap', '443/Tcp': 'Https', '445/Tcp': 'Smb', '465/Tcp': 'Smtps', '514/Udp': 'Syslog',
  '587/Tcp': 'Submission', '631/Tcp': 'Ipp', '636/Tcp': 'Ldaps', '853/Tcp': 'DnsOverTls', '993/Tcp': 'Imaps',
  '995/Tcp': 'Pop3s', '1194/Udp': 'OpenVpn', '1433/Tcp': 'MsSql', '1883/Tcp': 'Mqtt', '1900/Udp': 'Ssdp',
  '2049/Tcp': 'Nfs', '2375/Tcp': 'Docker', '2376/Tcp': 'DockerTls', '3000/Tcp': 'Http3000', '3306/Tcp': 'MySql',
  '3389/Tcp': 'Rdp', '5000/Tcp': 'Http5000', '5353/Udp': 'Mdns', '5432/Tcp': 'PostgreSQL', '5672/Tcp': 'Amqp',
  '5900/Tcp': 'Vnc', '6379/Tcp': 'Redis', '6443/Tcp': 'Kubernetes', '8006/Tcp': 'Proxmox', '8080/Tcp': 'HttpAlt',
  '8443/Tcp': 'HttpsAlt', '8883/Tcp': 'Mqtts', '9000/Tcp': 'Http9000', '9090/Tcp': 'Prometheus',
  '9100/Tcp': 'NodeExporter', '9200/Tcp': 'Elasticsearch', '27017/Tcp': 'MongoDb', '51820/Udp': 'WireGuard',
};

export function portType(number: number, protocol: Protocol): string {
  return WELL_KNOWN[`${number}/${protocol}`] ?? 'Custom';
}
