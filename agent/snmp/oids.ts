// The MIB objects the agent reads (RFC 3418 SNMPv2-MIB, RFC 2863 IF-MIB, RFC 4293 IP-MIB,
// RFC 4188 BRIDGE-MIB, RFC 4363 Q-BRIDGE-MIB, IEEE 802.1AB LLDP-MIB).
export const SYSTEM = {
  descr: '1.3.6.1.2.1.1.1.0',
  objectId: '1.3.6.1.2.1.1.2.0',
  contact: '1.3.6.1.2.1.1.4.0',
  name: '1.3.6.1.2.1.1.5.0',
  location: '1.3.6.1.2.1.1.6.0',
};
export const LLDP_LOC_CHASSIS_SUBTYPE = '1.0.8802.1.1.2.1.3.1.0';
export const LLDP_LOC_CHASSIS_ID = '1.0.8802.1.1.2.1.3.2.0';

export const IF_ENTRY = '1.3.6.1.2.1.2.2.1'; // .1 index .2 descr .3 type .5 speed .6 physAddress .7 admin .8 oper
export const IFX_ENTRY = '1.3.6.1.2.1.31.1.1.1'; // .1 name .15 highSpeed .18 alias
export const IP_NET_TO_MEDIA = '1.3.6.1.2.1.4.22.1'; // .2 physAddress; index ifIndex.a.b.c.d
export const IP_NET_TO_PHYSICAL = '1.3.6.1.2.1.4.35.1'; // .4 physAddress; index ifIndex.addrType.len.addr
export const DOT1D_BASE_BRIDGE_ADDRESS = '1.3.6.1.2.1.17.1.1.0'; // the bridge's own MAC (its base address)
export const DOT1D_BASE_PORT_IFINDEX = '1.3.6.1.2.1.17.1.4.1.2'; // index bridge port → ifIndex
export const DOT1D_TP_FDB = '1.3.6.1.2.1.17.4.3.1'; // .2 port .3 status; index MAC (6)
export const DOT1Q_TP_FDB = '1.3.6.1.2.1.17.7.1.2.2.1'; // .2 port .3 status; index fdbId.MAC (6)
export const LLDP_LOC_PORT = '1.0.8802.1.1.2.1.3.7.1'; // .3 portId .4 portDesc; index localPortNum
export const LLDP_REM = '1.0.8802.1.1.2.1.4.1.1'; // .4 chassisSubtype .5 chassisId .6 portSubtype .7 portId .8 portDesc .9 sysName .10 sysDesc; index timeMark.localPort.remIndex
export const LLDP_REM_MAN_ADDR = '1.0.8802.1.1.2.1.4.2.1'; // index timeMark.localPort.remIndex.addrSubtype.len.addr

/**
 * dot1dTpFdbStatus / dot1qTpFdbStatus: learned(3), mgmt(5) (also a static entry, configured for a
 * host) and other(1) are hosts on the port; self(4) is the switch's own MAC and invalid(2) an entry
 * aged out but not yet flushed. A MAC of the switch itself is never a host, whatever its status.
 */
export const FDB_STATUS_INVALID = 2;
export const FDB_STATUS_SELF = 4;
